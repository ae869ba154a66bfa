//! The LSP base protocol over any bytes: a message no larger than the limit,
//! a typed error, or the end; never a panic. A body written is read back.
#![no_main]
use libfuzzer_sys::fuzz_target;

const LIMIT: u64 = 64 * 1024;

fuzz_target!(|bytes: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let mut reader = tokio::io::BufReader::new(bytes);
        for _ in 0..16 {
            match seam_lsp::framing::read_message(&mut reader, LIMIT).await {
                Ok(Some(body)) => assert!(body.len() as u64 <= LIMIT),
                Ok(None) | Err(_) => break,
            }
        }
        if bytes.len() as u64 <= LIMIT {
            let mut framed = Vec::new();
            seam_lsp::framing::write_message(&mut framed, bytes).await.unwrap();
            let mut reader = tokio::io::BufReader::new(&framed[..]);
            assert_eq!(seam_lsp::framing::read_message(&mut reader, LIMIT).await.unwrap().as_deref(), Some(bytes));
        }
    });
});
