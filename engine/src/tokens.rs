//! How many tokens a text costs a model, estimated with OpenAI's `o200k_base`
//! encoding (`tiktoken-rs`, whose tables are built into the binary: nothing is
//! downloaded). Anthropic's tokenizer is not public, so every figure from here is
//! an estimate and is named one. The tables are built on first use, never on a path
//! that does not count (`validate` does not).

/// The estimated tokens of `text`.
pub fn estimate(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
}

/// The encoding the estimates use, for reports.
pub const ENCODING: &str = "o200k_base";
