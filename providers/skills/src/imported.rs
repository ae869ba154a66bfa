//! Skills an MCP mount imports from its server (`skills: { import: true }`): the
//! catalog has their listed summaries (`registry::with_imported`); a body is read
//! from the server only when the skill is invoked, and used only when its size and
//! `sha256:` digest are the ones the server listed. Served on over seam's own
//! skills extension, an imported skill keeps its server's manifest under seam's
//! `skill://<name>/` URIs, and each file read through seam is checked the same way.

use seam_engine::offers::{ImportedFile, ImportedSkill, MountRequest};
use seam_engine::runtime::Client;
use seam_engine::surface::Provider;
use serde_json::Value as Json;
use tokio_util::sync::CancellationToken;

use crate::discover::MAX_SKILL_FILE_BYTES;
use crate::served::{File, MAX_BYTES, MAX_FILES, ServeError};

/// Why an imported skill's body was not used.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    /// `SKILL_DIGEST_MISMATCH` for a body that is not the listed one; `SKILL_LOAD_FAILED` otherwise.
    pub code: seam_engine::codes::Code,
    pub message: String,
}

/// Why an imported skill is not served on over the extension, or a file of it not read.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The skill's URI does not end in `SKILL.md`.
    #[error("{uri} is not a SKILL.md")]
    NotSkillMd { uri: String },
    /// A file of its manifest is not under the folder of its SKILL.md.
    #[error("{uri} is not a file under {base}")]
    NotUnder { uri: String, base: String },
    /// Its manifest is past the bounds seam serves its own skills under.
    #[error("skill `{name}` lists {files} files of {bytes} bytes; a served skill holds at most {MAX_FILES} files of {MAX_BYTES} bytes")]
    TooLarge { name: String, files: usize, bytes: u64 },
    /// The server's `resources/read` answer has no `contents` array.
    #[error("the server's answer has no `contents`")]
    NoContents,
    #[error("the server's answer has no contents for {uri}")]
    NoContentsFor { uri: String },
    #[error("the contents of {uri} are neither text nor a blob")]
    NeitherTextNorBlob { uri: String },
    #[error("the blob of {uri} is not base64: {source}")]
    NotBase64 {
        uri: String,
        #[source]
        source: base64::DecodeError,
    },
    /// A file or folder the manifest does not serve.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// The file read from the server was not used.
    #[error(transparent)]
    Refused(#[from] Refused),
}

/// A skill that could not be loaded (`SKILL_LOAD_FAILED`), and why.
pub(crate) fn failed(message: String) -> Refused {
    Refused { code: crate::codes::SKILL_LOAD_FAILED, message }
}

/// The SKILL.md text of `skill`, read through mount `mount` (one of `providers`) for `client`.
pub async fn body(mount: &str, skill: &ImportedSkill, providers: &[Provider], client: Client) -> Result<String, Refused> {
    if skill.size > MAX_SKILL_FILE_BYTES {
        let what = format!("skill `{}` of MCP server `{mount}`", skill.name);
        return Err(failed(format!("{what}: its SKILL.md is listed at {} bytes; at most {MAX_SKILL_FILE_BYTES} are read", skill.size)));
    }
    let file = ImportedFile { uri: skill.uri.clone(), digest: skill.digest.clone(), size: skill.size };
    let bytes = fetch(mount, skill, &file, providers, client).await?;
    String::from_utf8(bytes).map_err(|_| failed(format!("skill `{}` of MCP server `{mount}`: {} is not UTF-8", skill.name, skill.uri)))
}

/// The bytes of `file` of `skill`, read through mount `mount`, refused unless they are
/// the size and digest the manifest gives.
async fn fetch(
    mount: &str,
    skill: &ImportedSkill,
    file: &ImportedFile,
    providers: &[Provider],
    client: Client,
) -> Result<Vec<u8>, Refused> {
    let what = format!("skill `{}` of MCP server `{mount}`", skill.name);
    let running = providers
        .iter()
        .find(|p| p.id == mount)
        .map(|p| p.running.clone())
        .ok_or_else(|| failed(format!("{what}: the mount is no longer this agent's")))?;
    let read = running.relay(MountRequest::ReadResource { uri: file.uri.clone() }, client, CancellationToken::new());
    let result = match read.await.map_err(|e| failed(format!("{what}: {e}")))? {
        seam_engine::chain::Answer::Result(result) => result,
        seam_engine::chain::Answer::Tool(_) => return Err(failed(format!("{what}: a read was answered as a call"))),
    };
    let bytes = contents(&result, &file.uri).map_err(|why| failed(format!("{what}: {why}")))?;
    let digest = crate::served::digest_of(&bytes);
    if bytes.len() as u64 != file.size || digest != file.digest {
        return Err(Refused {
            code: crate::codes::SKILL_DIGEST_MISMATCH,
            message: format!(
                "{what}: {} is {} bytes with digest {digest}, but the server listed {} bytes with digest {}; refused",
                file.uri,
                bytes.len(),
                file.size,
                file.digest
            ),
        });
    }
    Ok(bytes)
}

/// The skill's manifest as seam serves it: each file by its path under the skill's
/// folder (its URI past the folder of SKILL.md, decoded), SKILL.md first, the rest by
/// path; an error when a file is not under that folder.
fn served_files(skill: &ImportedSkill) -> Result<Vec<(File, &ImportedFile)>, ImportError> {
    let base = skill.uri.strip_suffix("SKILL.md").ok_or_else(|| ImportError::NotSkillMd { uri: skill.uri.clone() })?;
    let mut files = Vec::with_capacity(skill.files.len());
    for file in &skill.files {
        let path = file
            .uri
            .strip_prefix(base)
            .and_then(crate::served::decoded)
            .ok_or_else(|| ImportError::NotUnder { uri: file.uri.clone(), base: base.to_owned() })?;
        files.push((File { path, size: file.size, digest: file.digest.clone() }, file));
    }
    files.sort_by(|(a, _), (b, _)| (a.path != "SKILL.md", &a.path).cmp(&(b.path != "SKILL.md", &b.path)));
    // The bounds seam serves its own skills under.
    let bytes: u64 = files.iter().map(|(f, _)| f.size).sum();
    if files.len() > MAX_FILES || bytes > MAX_BYTES {
        return Err(ImportError::TooLarge { name: skill.name.clone(), files: files.len(), bytes });
    }
    Ok(files)
}

fn only_files(files: Vec<(File, &ImportedFile)>) -> Vec<File> {
    files.into_iter().map(|(file, _)| file).collect()
}

/// The skill's `skills/list` entry as seam serves it, under `skill://<name>/`.
pub fn entry(name: &str, skill: &ImportedSkill) -> Result<Json, ImportError> {
    let files = only_files(served_files(skill)?);
    Ok(crate::served::entry_of(name, Json::Object(skill.frontmatter.clone()), &files))
}

/// `resources/read` of the file at `path` of the skill, through its mount, as seam serves it.
pub async fn read(
    name: &str,
    mount: &str,
    skill: &ImportedSkill,
    path: &str,
    providers: &[Provider],
    hold: seam_engine::reads::ReadHold,
) -> Result<Json, ImportError> {
    let files = served_files(skill)?;
    let (_, file) =
        files.iter().find(|(f, _)| f.path == path).ok_or_else(|| ServeError::NoFile { name: name.to_owned(), path: path.to_owned() })?;
    // The size its server listed (a file of another size is refused after the fetch).
    hold.take(file.size).await;
    let bytes = fetch(mount, skill, file, providers, Client::default()).await?;
    Ok(crate::served::contents(name, path, bytes))
}

/// `resources/directory/read` of folder `path` of the skill, from its manifest.
pub fn directory(name: &str, skill: &ImportedSkill, path: &str) -> Result<Json, ImportError> {
    let files = only_files(served_files(skill)?);
    Ok(crate::served::directory_of(name, &files, path, || false)?)
}

/// The bytes of the contents at `uri` in a `resources/read` result: its text, or its
/// base64 blob decoded.
fn contents(result: &Json, uri: &str) -> Result<Vec<u8>, ImportError> {
    let entries = result["contents"].as_array().ok_or(ImportError::NoContents)?;
    let entry = entries.iter().find(|c| c["uri"] == uri).ok_or_else(|| ImportError::NoContentsFor { uri: uri.to_owned() })?;
    if let Some(text) = entry["text"].as_str() {
        return Ok(text.as_bytes().to_vec());
    }
    let blob = entry["blob"].as_str().ok_or_else(|| ImportError::NeitherTextNorBlob { uri: uri.to_owned() })?;
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(blob).map_err(|source| ImportError::NotBase64 { uri: uri.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An imported skill `s` whose manifest lists SKILL.md and `others` files of `size` bytes each.
    fn listed(skill_md: u64, others: usize, size: u64) -> ImportedSkill {
        let file = |uri: String, size: u64| ImportedFile { uri, digest: "sha256:00".into(), size };
        let mut files = vec![file("skill://s/SKILL.md".into(), skill_md)];
        files.extend((0..others).map(|n| file(format!("skill://s/f{n}"), size)));
        ImportedSkill {
            name: "s".into(),
            uri: "skill://s/SKILL.md".into(),
            digest: "sha256:00".into(),
            size: skill_md,
            frontmatter: Default::default(),
            files,
        }
    }

    /// An imported skill is served under the bounds seam's own skills are: `MAX_FILES`
    /// files and `MAX_BYTES` bytes, at the bound and not one past it.
    #[test]
    fn an_imported_manifest_is_served_up_to_max_files_and_max_bytes() {
        assert_eq!(served_files(&listed(1, MAX_FILES - 1, 1)).map(|f| f.len()).ok(), Some(MAX_FILES));
        assert!(matches!(served_files(&listed(1, MAX_FILES, 1)), Err(ImportError::TooLarge { .. })));
        let half = MAX_BYTES / 2;
        assert!(served_files(&listed(0, 2, half)).is_ok());
        assert!(matches!(served_files(&listed(1, 2, half)), Err(ImportError::TooLarge { .. })));
        assert!(matches!(
            served_files(&ImportedSkill { uri: "skill://s/README".into(), ..listed(1, 0, 0) }),
            Err(ImportError::NotSkillMd { .. })
        ));
        let outside =
            ImportedSkill { files: vec![ImportedFile { uri: "skill://t/x".into(), digest: String::new(), size: 0 }], ..listed(1, 0, 0) };
        assert!(matches!(served_files(&outside), Err(ImportError::NotUnder { .. })));
    }

    /// A SKILL.md listed past `MAX_SKILL_FILE_BYTES` is refused before it is read; one at
    /// the bound is read (here: its mount is gone, so the read is what fails).
    #[tokio::test]
    async fn an_imported_skill_md_is_read_up_to_max_skill_file_bytes() {
        let past = body("m", &listed(MAX_SKILL_FILE_BYTES + 1, 0, 0), &[], Client::default()).await.unwrap_err();
        assert!(past.message.contains("at most"), "{}", past.message);
        let at = body("m", &listed(MAX_SKILL_FILE_BYTES, 0, 0), &[], Client::default()).await.unwrap_err();
        assert!(at.message.contains("no longer this agent's"), "{}", at.message);
    }
}
