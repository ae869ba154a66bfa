//! Skills an MCP mount imports from its server (`skills: { import: true }`): the
//! catalog has their listed summaries (`registry::with_imported`); a body is read
//! from the server only when the skill is invoked, and used only when its size and
//! `sha256:` digest are the ones the server listed.

use seam_engine::offers::{ImportedSkill, MountRequest};
use seam_engine::runtime::Client;
use seam_engine::surface::Provider;
use serde_json::Value as Json;
use tokio_util::sync::CancellationToken;

use crate::discover::MAX_SKILL_FILE_BYTES;

/// Why an imported skill's body was not used.
#[derive(Debug)]
pub struct Refused {
    /// `SKILL_DIGEST_MISMATCH` for a body that is not the listed one; `SKILL_LOAD_FAILED` otherwise.
    pub code: &'static str,
    pub message: String,
}

fn failed(message: String) -> Refused {
    Refused { code: "SKILL_LOAD_FAILED", message }
}

/// The SKILL.md text of `skill`, read through mount `mount` (one of `providers`) for `client`.
pub async fn body(mount: &str, skill: &ImportedSkill, providers: &[Provider], client: Client) -> Result<String, Refused> {
    let what = format!("skill `{}` of MCP server `{mount}`", skill.name);
    if skill.size > MAX_SKILL_FILE_BYTES {
        return Err(failed(format!("{what}: its SKILL.md is listed at {} bytes; at most {MAX_SKILL_FILE_BYTES} are read", skill.size)));
    }
    let running = providers
        .iter()
        .find(|p| p.id == mount)
        .map(|p| p.running.clone())
        .ok_or_else(|| failed(format!("{what}: the mount is no longer this agent's")))?;
    let read = running.request(MountRequest::ReadResource { uri: skill.uri.clone() }, client, CancellationToken::new());
    let result = read.await.map_err(|e| failed(format!("{what}: {e}")))?;
    let bytes = contents(&result, &skill.uri).map_err(|why| failed(format!("{what}: {why}")))?;
    let digest = crate::served::digest_of(&bytes);
    if bytes.len() as u64 != skill.size || digest != skill.digest {
        return Err(Refused {
            code: "SKILL_DIGEST_MISMATCH",
            message: format!(
                "{what}: {} is {} bytes with digest {digest}, but the server listed {} bytes with digest {}; refused",
                skill.uri,
                bytes.len(),
                skill.size,
                skill.digest
            ),
        });
    }
    String::from_utf8(bytes).map_err(|_| failed(format!("{what}: {} is not UTF-8", skill.uri)))
}

/// The bytes of the contents at `uri` in a `resources/read` result: its text, or its
/// base64 blob decoded.
fn contents(result: &Json, uri: &str) -> Result<Vec<u8>, String> {
    let entries = result["contents"].as_array().ok_or("the server's answer has no `contents`")?;
    let entry = entries.iter().find(|c| c["uri"] == uri).ok_or_else(|| format!("the server's answer has no contents for {uri}"))?;
    if let Some(text) = entry["text"].as_str() {
        return Ok(text.as_bytes().to_vec());
    }
    let blob = entry["blob"].as_str().ok_or_else(|| format!("the contents of {uri} are neither text nor a blob"))?;
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(blob).map_err(|e| format!("the blob of {uri} is not base64: {e}"))
}
