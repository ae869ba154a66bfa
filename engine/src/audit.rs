//! `serve.audit`: a trail of every request that reached the call stage (calls, reads,
//! `prompts/get`, completions, `tasks/*`), those refused there and those no route took
//! included, as JSON Lines. Each record carries the sha256 of the one before (`prev`),
//! so an edit, a removal or a reordering breaks the chain at the next record; with
//! `key_env` each also carries an HMAC under that key, so that whoever can write the
//! file cannot write a chain that checks. A cut tail leaves a sound chain: the head
//! (`/status`, and logged at each rotation) kept elsewhere catches it (`verify --head`).
//!
//! A record names the agent, the token's name (never the token), the mount, the method,
//! the target, the sha256 of the canonical arguments (the arguments only with
//! `include_arguments`), the decision, the result (seam's code when seam made the
//! failure, routing, a hook or a mount; `tool_error` for a server's error result), the
//! time taken and the generation. It quotes no message, so no
//! secret a message might hold reaches it.
//!
//! Records are written in order under one lock, each a `write` to the file (not synced):
//! the chain is only as durable as the page cache until the kernel writes it.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value as Json, json};
use sha2::Digest;

use crate::model::AuditConfig;

/// What became of a request at the call stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Sent to what serves it.
    Served,
    /// Sent, once a person approved it (`approve`).
    Approved,
    /// Nothing the agent is offered answers to it (visibility).
    Denied,
    /// Its tool is held by its mount's pin.
    Held,
    /// A person did not approve it, or could not be asked.
    Declined,
    /// Past one of the agent's `quota` rules.
    OverQuota,
    /// Refused by another hook of the call stage.
    Refused,
    /// Dropped before it was answered (a 2026-07-28 call whose wait for its client's
    /// answers expired): it may have reached its server.
    Cancelled,
}

impl Decision {
    pub const ALL: [Decision; 8] = [
        Decision::Served,
        Decision::Approved,
        Decision::Denied,
        Decision::Held,
        Decision::Declined,
        Decision::OverQuota,
        Decision::Refused,
        Decision::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Served => "served",
            Decision::Approved => "approved",
            Decision::Denied => "denied",
            Decision::Held => "held",
            Decision::Declined => "declined",
            Decision::OverQuota => "over_quota",
            Decision::Refused => "refused",
            Decision::Cancelled => "cancelled",
        }
    }
}

/// One request, as a record holds it.
pub struct Record<'a> {
    pub agent: &'a str,
    pub token: Option<&'a str>,
    pub mount: Option<&'a str>,
    pub method: &'a str,
    pub target: &'a str,
    pub arguments: &'a Map<String, Json>,
    pub decision: Decision,
    /// `ok`, `tool_error` (a server's result with `isError`), `error` (a JSON-RPC error),
    /// or the code of the failure seam answered with.
    pub result: &'a str,
    pub took: std::time::Duration,
    pub generation: u64,
}

/// Why a trail cannot be kept, with the `serve.audit` key it is about.
#[derive(Debug, thiserror::Error)]
pub enum Unkept {
    #[error("`serve.audit.key_env` names `{0}`, which is unset or empty")]
    Key(String),
    #[error("{0}")]
    File(String),
}

impl Unkept {
    /// Where the composition writes what is wrong.
    pub fn pointer(&self) -> &'static str {
        match self {
            Unkept::Key(_) => "/serve/audit/key_env",
            Unkept::File(_) => "/serve/audit/path",
        }
    }
}

/// An open trail: its file, and the hash its next record follows.
pub struct Trail {
    config: AuditConfig,
    key: Option<Vec<u8>>,
    /// Shared with the trail it replaced when a reload keeps the path (`open_after`), so
    /// that requests still holding that one write on the same chain.
    writer: std::sync::Arc<Mutex<Writer>>,
}

struct Writer {
    file: std::fs::File,
    size: u64,
    /// The hash of the last record written (in this file or the one rotated before it).
    head: Option<String>,
}

/// The hash a record is chained by: sha256 of its line as written.
pub fn line_hash(line: &str) -> String {
    format!("sha256:{}", hex(&sha2::Sha256::digest(line.as_bytes())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

type Hmac = hmac::Hmac<sha2::Sha256>;

/// The HMAC a record carries: over its canonical JSON without the `hmac` field.
fn seal(key: &[u8], unsealed: &str) -> String {
    use hmac::Mac;
    let mut mac = <Hmac as hmac::KeyInit>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(unsealed.as_bytes());
    hex(&mac.finalize().into_bytes())
}

/// The last line of the file at `path`, if it has one (read from its end, as bytes: the
/// place read from may fall inside a character).
fn last_line(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut tail_from = size.saturating_sub(64 << 10);
    loop {
        file.seek(std::io::SeekFrom::Start(tail_from)).ok()?;
        let mut tail = Vec::new();
        (&mut file).take(size - tail_from).read_to_end(&mut tail).ok()?;
        let end = tail.iter().rposition(|b| *b != b'\n').map_or(0, |at| at + 1);
        let tail = &tail[..end];
        match tail.iter().rposition(|b| *b == b'\n') {
            Some(at) => return String::from_utf8(tail[at + 1..].to_vec()).ok(),
            None if tail_from == 0 => return (!tail.is_empty()).then(|| String::from_utf8(tail.to_vec()).ok()).flatten(),
            // A record longer than the tail read: read further back.
            None => tail_from = tail_from.saturating_sub(1 << 20),
        }
    }
}

/// The path of rotated file `n` (`audit.jsonl.1` is the newest).
fn rotated(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

impl Trail {
    /// Opens the trail `config` names, creating its folder and file: its next record
    /// follows the last one written there (or in the file rotated before it), whatever
    /// process wrote it. The key is read from the variable `key_env` names.
    pub fn open(config: &AuditConfig, env: &dyn crate::env::Env) -> Result<Trail, Unkept> {
        let key = Trail::open_key(config, env)?;
        if let Some(parent) = config.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Unkept::File(format!("{}: {e}", parent.display())))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&config.path)
            .map_err(|e| Unkept::File(format!("{}: {e}", config.path.display())))?;
        let size = file.metadata().map_err(|e| Unkept::File(e.to_string()))?.len();
        let head = last_line(&config.path).or_else(|| last_line(&rotated(&config.path, 1))).map(|line| line_hash(&line));
        Ok(Trail { config: config.clone(), key, writer: std::sync::Arc::new(Mutex::new(Writer { file, size, head })) })
    }

    /// The trail a reload's `config` names, after `live`: `live` itself when nothing
    /// changed; one writing on `live`'s file and chain when only the other settings
    /// did (a second writer would fork the chain); else one opened anew.
    pub fn open_after(
        config: &AuditConfig,
        live: Option<std::sync::Arc<Trail>>,
        env: &dyn crate::env::Env,
    ) -> Result<std::sync::Arc<Trail>, Unkept> {
        match live {
            Some(live) if live.is(config) => Ok(live),
            Some(live) if live.config.path == config.path => {
                let opened = Trail::open_key(config, env)?;
                Ok(std::sync::Arc::new(Trail { config: config.clone(), key: opened, writer: live.writer.clone() }))
            }
            _ => Trail::open(config, env).map(std::sync::Arc::new),
        }
    }

    /// The key `key_env` names, read now.
    fn open_key(config: &AuditConfig, env: &dyn crate::env::Env) -> Result<Option<Vec<u8>>, Unkept> {
        match &config.key_env {
            Some(name) => match env.var(name) {
                Some(key) if !key.is_empty() => Ok(Some(key.into_bytes())),
                _ => Err(Unkept::Key(name.clone())),
            },
            None => Ok(None),
        }
    }

    /// Whether it writes what `config` says, as it was opened (a reload that keeps it keeps the trail).
    pub fn is(&self, config: &AuditConfig) -> bool {
        self.config == *config
    }

    /// The hash of the last record written: what `verify --head` checks a trail against.
    pub fn head(&self) -> Option<String> {
        self.writer.lock().expect("audit lock").head.clone()
    }

    pub fn path(&self) -> &Path {
        &self.config.path
    }

    /// Writes one record after the last; an error is logged (the request has been answered).
    pub fn record(&self, record: Record<'_>) {
        let mut fields = Map::new();
        fields.insert("time".into(), Json::from(humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()));
        fields.insert("agent".into(), Json::from(record.agent));
        fields.insert("token".into(), record.token.map_or(Json::Null, Json::from));
        fields.insert("mount".into(), record.mount.map_or(Json::Null, Json::from));
        fields.insert("method".into(), Json::from(record.method));
        fields.insert("target".into(), Json::from(record.target));
        fields.insert("arguments_sha256".into(), Json::from(crate::chain::arguments_digest(record.arguments)));
        if self.config.include_arguments {
            fields.insert("arguments".into(), Json::Object(record.arguments.clone()));
        }
        fields.insert("decision".into(), Json::from(record.decision.as_str()));
        fields.insert("result".into(), Json::from(record.result));
        fields.insert("ms".into(), Json::from(record.took.as_millis() as u64));
        fields.insert("generation".into(), Json::from(record.generation));
        let mut writer = self.writer.lock().expect("audit lock");
        if let Err(e) = self.write(&mut writer, fields) {
            tracing::error!(path = %self.config.path.display(), "an audit record could not be written: {e}");
        }
    }

    fn write(&self, writer: &mut Writer, mut fields: Map<String, Json>) -> std::io::Result<()> {
        fields.insert("prev".into(), writer.head.clone().map_or(Json::Null, Json::from));
        if let Some(key) = &self.key {
            let unsealed = crate::plan::canonical_json(&Json::Object(fields.clone()));
            fields.insert("hmac".into(), Json::from(seal(key, &unsealed)));
        }
        let line = crate::plan::canonical_json(&Json::Object(fields));
        let bytes = line.len() as u64 + 1;
        if writer.size > 0 && writer.size + bytes > self.config.max_size.bytes() {
            self.rotate(writer)?;
        }
        writer.file.write_all(format!("{line}\n").as_bytes())?;
        writer.size += bytes;
        writer.head = Some(line_hash(&line));
        Ok(())
    }

    /// The file full: it becomes `PATH.1` (the older ones move up, the one past `keep`
    /// goes), a new one is begun, chained on from the last record; the head is logged.
    fn rotate(&self, writer: &mut Writer) -> std::io::Result<()> {
        let path = &self.config.path;
        let keep = self.config.keep.max(1);
        let _ = std::fs::remove_file(rotated(path, keep));
        for n in (1..keep).rev() {
            let from = rotated(path, n);
            if from.exists() {
                std::fs::rename(&from, rotated(path, n + 1))?;
            }
        }
        std::fs::rename(path, rotated(path, 1))?;
        writer.file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        writer.size = 0;
        tracing::info!(path = %path.display(), audit_head = writer.head.as_deref().unwrap_or(""), "audit trail rotated");
        Ok(())
    }

    /// `/status`'s view: where it writes and its head.
    pub fn status(&self) -> Json {
        json!({ "path": self.config.path.display().to_string(), "head": self.head(), "hmac": self.key.is_some() })
    }
}

/// What a sound trail holds.
#[derive(Debug, PartialEq)]
pub struct Verified {
    pub records: usize,
    pub head: Option<String>,
}

/// Where a trail is broken, and how.
#[derive(Debug, PartialEq)]
pub struct Broken {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    pub why: String,
}

/// Checks the files of one trail, oldest first: each record follows the one before it
/// (`prev`), carries the HMAC under `key` when one is given, and the last is `head`
/// when one is given. The first record of the first file follows whatever came before.
pub fn verify(files: &[PathBuf], key: Option<&[u8]>, head: Option<&str>) -> Result<Verified, Broken> {
    let mut last: Option<String> = None;
    let mut records = 0;
    let mut at_last = None;
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| Broken { file: file.clone(), line: 0, why: format!("unreadable: {e}") })?;
        for (n, line) in text.lines().enumerate() {
            let broken = |why: String| Broken { file: file.clone(), line: n + 1, why };
            let Ok(Json::Object(mut fields)) = serde_json::from_str::<Json>(line) else {
                return Err(broken("not a record (a JSON object)".to_owned()));
            };
            let prev = fields.get("prev").and_then(Json::as_str).map(str::to_owned);
            if records > 0 && prev != last {
                return Err(broken(
                    "its `prev` is not the hash of the record before it: that record was changed, or records between them removed or moved"
                        .to_owned(),
                ));
            }
            if let Some(key) = key {
                let Some(Json::String(sealed)) = fields.remove("hmac") else {
                    return Err(broken("it carries no `hmac`, though a key was given".to_owned()));
                };
                if seal(key, &crate::plan::canonical_json(&Json::Object(fields))) != sealed {
                    return Err(broken("its `hmac` does not match its content under the key: it was changed".to_owned()));
                }
            }
            last = Some(line_hash(line));
            at_last = Some((file.clone(), n + 1));
            records += 1;
        }
    }
    if let Some(head) = head
        && last.as_deref() != Some(head)
    {
        let (file, line) = at_last.unwrap_or_else(|| (files.first().cloned().unwrap_or_default(), 0));
        let why = format!(
            "the trail ends at {}, not at the head given ({head}): records after it are missing",
            last.as_deref().unwrap_or("no record")
        );
        return Err(Broken { file, line, why });
    }
    Ok(Verified { records, head: last })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, max_size: u64, key_env: Option<&str>) -> AuditConfig {
        AuditConfig {
            path: dir.join("audit.jsonl"),
            max_size: crate::units::Size::from_bytes(max_size),
            keep: 3,
            include_arguments: false,
            key_env: key_env.map(str::to_owned),
        }
    }

    struct Keyed;
    impl crate::env::Env for Keyed {
        fn var(&self, name: &str) -> Option<String> {
            (name == "SEAM_AUDIT_KEY").then(|| "k3y".to_owned())
        }
    }

    fn call(trail: &Trail, target: &str) {
        let arguments = Map::from_iter([("secret".to_owned(), Json::from("hunter2"))]);
        trail.record(Record {
            agent: "default",
            token: Some("env:SEAM_TOKEN"),
            mount: Some("f"),
            method: "tools/call",
            target,
            arguments: &arguments,
            decision: Decision::Served,
            result: "ok",
            took: std::time::Duration::from_millis(3),
            generation: 1,
        });
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("seam-audit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// A sound trail verifies, rotated files and a reopened trail included; an edited,
    /// removed or moved record breaks it at the record after, and a cut tail at the head.
    #[test]
    fn a_chain_verifies_and_each_tampering_is_named() {
        let dir = scratch("chain");
        let config = config(&dir, 800, None);
        let trail = Trail::open(&config, &Keyed).unwrap();
        for n in 0..4 {
            call(&trail, &format!("mcp__f__t{n}"));
        }
        drop(trail);
        // Reopened (another process, a reload): it chains on.
        let trail = Trail::open(&config, &Keyed).unwrap();
        for n in 4..8 {
            call(&trail, &format!("mcp__f__t{n}"));
        }
        let head = trail.head().unwrap();
        let files: Vec<PathBuf> = [rotated(&config.path, 3), rotated(&config.path, 2), rotated(&config.path, 1), config.path.clone()]
            .into_iter()
            .filter(|p| p.exists())
            .collect();
        assert!(files.len() >= 3, "it rotated: {files:?}");
        let sound = verify(&files, None, Some(&head)).unwrap();
        assert_eq!(sound.head.as_deref(), Some(head.as_str()));
        let text = std::fs::read_to_string(&config.path).unwrap();
        assert!(!text.contains("hunter2"), "arguments are hashed, not written: {text}");

        let last = files.last().unwrap().clone();
        let lines: Vec<String> = std::fs::read_to_string(&last).unwrap().lines().map(str::to_owned).collect();
        assert!(lines.len() >= 2, "{lines:?}");
        let tampered = |lines: &[String]| {
            std::fs::write(&last, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
            verify(&files, None, Some(&head))
        };
        let mut edited = lines.clone();
        edited[0] = edited[0].replace("\"ok\"", "\"tool_error\"");
        assert_eq!(tampered(&edited).unwrap_err().line, 2, "an edit breaks the chain at the next record");
        let removed: Vec<String> = lines[1..].to_vec();
        let broken = tampered(&removed).unwrap_err();
        assert_eq!((broken.file.clone(), broken.line), (last.clone(), 1), "{broken:?}");
        let mut moved = lines.clone();
        moved.swap(0, 1);
        assert!(tampered(&moved).is_err(), "a reordering breaks it");
        let cut = lines[..lines.len() - 1].to_vec();
        let broken = tampered(&cut).unwrap_err();
        assert!(broken.why.contains("records after it are missing"), "{broken:?}");
        assert!(tampered(&cut).is_err() && verify(&files, None, None).is_ok(), "only the head catches a cut tail");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A reload that changes a trail's settings but not its path writes on the same chain
    /// (requests still holding the old trail included): one writer, never two.
    #[test]
    fn a_reload_that_keeps_the_path_keeps_one_chain() {
        let dir = scratch("reload");
        let before = config(&dir, 1 << 20, None);
        let old = std::sync::Arc::new(Trail::open(&before, &Keyed).unwrap());
        call(&old, "mcp__f__a");
        let after = AuditConfig { include_arguments: true, ..before.clone() };
        let new = Trail::open_after(&after, Some(old.clone()), &Keyed).unwrap();
        assert!(!std::sync::Arc::ptr_eq(&old, &new) && new.is(&after));
        call(&new, "mcp__f__b");
        call(&old, "mcp__f__c");
        call(&new, "mcp__f__d");
        let sound = verify(std::slice::from_ref(&before.path), None, new.head().as_deref()).unwrap();
        assert_eq!(sound.records, 4);
        assert!(std::fs::read_to_string(&before.path).unwrap().contains("hunter2"), "the new settings apply to the new trail's records");
        let same = Trail::open_after(&after, Some(new.clone()), &Keyed).unwrap();
        assert!(std::sync::Arc::ptr_eq(&same, &new), "nothing changed: the same trail");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// With a key, each record carries an HMAC: a record rewritten with its chain mended
    /// (which needs no key) still fails, and no key or the wrong one is told apart.
    #[test]
    fn a_keyed_trail_catches_a_mended_chain() {
        let dir = scratch("keyed");
        let config = config(&dir, 1 << 20, Some("SEAM_AUDIT_KEY"));
        let unset = Trail::open(&config, &crate::env::ProcessEnv).err().expect("an unset key is refused");
        assert!(matches!(&unset, Unkept::Key(name) if name == "SEAM_AUDIT_KEY") && unset.pointer() == "/serve/audit/key_env", "{unset}");
        let trail = Trail::open(&config, &Keyed).unwrap();
        call(&trail, "mcp__f__a");
        call(&trail, "mcp__f__b");
        let files = vec![config.path.clone()];
        assert!(verify(&files, Some(b"k3y"), trail.head().as_deref()).is_ok());
        assert_eq!(verify(&files, Some(b"other"), None).unwrap_err().line, 1);
        // The last record rewritten, its `prev` still right: the chain holds, the HMAC does not.
        let text = std::fs::read_to_string(&config.path).unwrap();
        std::fs::write(&config.path, text.replacen("mcp__f__b", "mcp__f__c", 1)).unwrap();
        assert!(verify(&files, None, None).is_ok(), "without the key, a rewritten last record passes");
        let broken = verify(&files, Some(b"k3y"), None).unwrap_err();
        assert_eq!(broken.line, 2, "{broken:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
