//! `${…}` over any text: an answer or a typed error, never a panic. Text
//! without `$` has nothing to expand; `$$` alone is one `$`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let env: std::collections::HashMap<String, String> =
        [("SET".to_owned(), "value".to_owned()), ("EMPTY".to_owned(), String::new())].into();
    let out = seam_engine::load::interpolate(text, &env);
    if !text.contains('$') {
        assert_eq!(out, Ok(None), "{text:?}");
    }
    let doubled = text.replace('$', "$$");
    assert_eq!(seam_engine::load::interpolate(&doubled, &env).map(|o| o.unwrap_or(doubled.clone())), Ok(text.to_owned()));
});
