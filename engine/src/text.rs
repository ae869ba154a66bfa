//! Text cut to a bound: a tool's result, an agent's instructions.

/// Cuts `text` to at most `max` characters; whether it cut anything.
pub fn truncate_chars(text: &mut String, max: u64) -> bool {
    match text.char_indices().nth(max as usize) {
        Some((at, _)) => {
            text.truncate(at);
            true
        }
        None => false,
    }
}

/// Cuts `text` so that it, `footer` included, is at most `max` characters
/// (a cap smaller than the footer cuts the footer too); whether it cut.
pub fn cap_with_footer(text: &mut String, max: u64, footer: &str) -> bool {
    if text.chars().count() as u64 <= max {
        return false;
    }
    truncate_chars(text, max.saturating_sub(footer.chars().count() as u64));
    text.push_str(footer);
    truncate_chars(text, max);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_text_holds_its_cap_footer_included() {
        let mut exact = "abcdé".to_owned();
        assert!(!cap_with_footer(&mut exact, 5, "[cut]"), "at the cap nothing is cut");
        let mut over = "abcdéfgh".to_owned();
        assert!(cap_with_footer(&mut over, 7, "[cut]"));
        assert_eq!(over, "ab[cut]");
        let mut tiny = "abcdef".to_owned();
        assert!(cap_with_footer(&mut tiny, 3, "[cut]"));
        assert_eq!(tiny, "[cu", "a cap under the footer's length cuts the footer");
    }
}
