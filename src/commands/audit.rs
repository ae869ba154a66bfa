//! `seam audit verify PATH… [--head HASH] [--key-env VAR]`: checks an audit trail's
//! chain (and its HMACs, given the key), naming the first broken record.

use std::path::PathBuf;

use crate::Exit;

pub struct Args {
    pub paths: Vec<PathBuf>,
    pub head: Option<String>,
    pub key_env: Option<String>,
}

/// Exit 0 when the trail is sound, 1 when it is broken (the record and why on stderr),
/// 2 when the key's variable is unset.
pub fn verify(args: Args) -> Result<Exit, crate::error::Error> {
    let key = match &args.key_env {
        Some(name) => match std::env::var(name) {
            Ok(key) if !key.is_empty() => Some(key.into_bytes()),
            _ => {
                eprintln!("seam: `--key-env {name}` names a variable that is unset or empty");
                return Ok(Exit::UsageOrIo);
            }
        },
        None => None,
    };
    match seam_engine::audit::verify(&args.paths, key.as_deref(), args.head.as_deref()) {
        Ok(sound) => {
            let checked = if key.is_some() { "chain and HMACs intact" } else { "chain intact" };
            println!("{} records, {checked}; head {}", sound.records, sound.head.as_deref().unwrap_or("(none)"));
            Ok(Exit::Valid)
        }
        Err(broken) => {
            eprintln!("{}:{}: the trail is broken: {}", broken.file.display(), broken.line, broken.why);
            Ok(Exit::Invalid)
        }
    }
}
