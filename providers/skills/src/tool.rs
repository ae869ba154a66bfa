//! The two invocation paths over one catalog. The model path is the `skill`
//! tool, whose description carries the catalog (sorted model-invocable names
//! with one-line descriptions); the user path is one MCP prompt per
//! user-invocable skill. Each path checks its permission on the listed summary
//! and again on the loaded file, and both render with `render`. The same
//! catalog is also served over MCP's skills extension (`skills`, `read_skill`):
//! every skill one of the paths may invoke, its permissions in its frontmatter
//! for the host to honour.

use std::path::PathBuf;
use std::sync::Arc;

use seam_engine::reads::ReadHold;
use seam_engine::render::escape_markup;
use seam_engine::runtime::{BoxFuture, Client, ProviderError, ToolOutput};
use seam_engine::surface::{Listed, Listing, PromptCall, PromptError, PromptSpec, Provider, SkillRead, ToolCall};
use serde_json::{Map, Value as Json, json};

use crate::SkillSettings;
use crate::discover::{self, Candidate, Folder, Place};
use crate::registry::{self, Catalog};
use crate::{imported, served, skill};

const PREAMBLE: &str = "Load a skill: instructions, with resources, for one kind of task. When the task at hand matches a \
skill's description below, call this tool with that skill's name before starting, then follow the instructions it returns.";

pub fn definition(_: &SkillSettings) -> Map<String, Json> {
    let definition = json!({
        "description": PREAMBLE,
        "inputSchema": {
            "type": "object",
            "properties": { "name": { "type": "string", "description": "The name of a skill in the catalog." } },
            "required": ["name"],
            "additionalProperties": false
        },
        "annotations": { "readOnlyHint": true }
    });
    match definition {
        Json::Object(m) => m,
        _ => unreachable!("a definition is an object"),
    }
}

/// Catalog text (`Summary::catalog_text`) cut to `max` characters, `...` included.
pub fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    // No more bytes than `max`: no more characters either, nothing to count.
    if text.len() <= max {
        return text.into();
    }
    match text.char_indices().nth(max) {
        None => text.into(),
        Some(_) => {
            let end = text.char_indices().nth(max.saturating_sub(3)).map_or(text.len(), |(i, _)| i);
            format!("{}...", &text[..end]).into()
        }
    }
}

/// The `skill` tool's description for a catalog.
pub fn describe(catalog: &Catalog, max: usize) -> String {
    if let Some(reason) = &catalog.unavailable {
        return format!("{PREAMBLE}\n\nThe skill catalog could not be read yet ({reason}); it is read again at the next listing.");
    }
    // Sized once: the catalog text of thousands of skills is megabytes.
    let size: usize = catalog.skills.values().map(|c| c.name.len() + c.line.len().min(max.saturating_mul(4)) + 4).sum();
    let mut out = String::with_capacity(PREAMBLE.len() + size + 64);
    out.push_str(PREAMBLE);
    out.push_str("\n\n<available_skills>\n");
    let mut any = false;
    for c in catalog.skills.values().filter(|c| c.summary.model_invocable) {
        any = true;
        out.push_str("- ");
        out.push_str(&c.summary.name);
        out.push_str(": ");
        out.push_str(&cut(&c.line, max));
        out.push('\n');
    }
    out.push_str("</available_skills>");
    if !any {
        out.push_str("\nNo skills are available now.");
    }
    out
}

/// The canonical rendering both paths use: the framing escaped, the body verbatim.
pub fn render(name: &str, base: &str, body: &str) -> String {
    format!(
        "<skill_content name=\"{}\" base=\"{}\">\nThis skill's resources (scripts, references, assets) are files under {}; \
         read one only when the instructions below call for it.\n\n{body}\n</skill_content>",
        escape_markup(name),
        escape_markup(base),
        escape_markup(base),
    )
}

/// Where a skill's resources are, as `render` names them: its folder, or for an
/// imported skill the server's URI its SKILL.md is in.
fn base_of(candidate: &Candidate) -> String {
    match &candidate.place {
        Place::Folder(folder) => folder.dir.display().to_string(),
        Place::Mount { skill, .. } => skill.uri.strip_suffix("SKILL.md").unwrap_or(&skill.uri).to_owned(),
    }
}

/// The catalog the agent's session sees, from its providers and roots.
async fn catalog_for(providers: &[Provider], roots: &[std::path::PathBuf]) -> Arc<Catalog> {
    served_for(providers, roots).await.0
}

/// The catalog the agent's session sees, with the digests of the files served from
/// it: both kept on the first mount of the agent's chain (`registry::Chains`,
/// `served::Digests`); with no skills mount, none are kept.
async fn served_for(providers: &[Provider], roots: &[std::path::PathBuf]) -> (Arc<Catalog>, Arc<served::Digests>) {
    let chain = registry::layered(providers);
    let owner = chain.first().map(|l| l.mount.clone());
    let configured = owner.as_ref().and_then(|m| m.configured_root.clone());
    let workspace = registry::workspace_of(configured.as_deref(), roots);
    let catalog = registry::with_imported(registry::catalog(workspace, chain).await, owner.as_deref(), providers);
    (catalog, owner.map(|m| m.digests.clone()).unwrap_or_default())
}

/// Why a skill's file or folder was not read (its root refused, or the read failed).
#[derive(Debug, thiserror::Error)]
pub enum SkillReadError {
    /// Under `read_only_roots`, the skill's root judged again and refused.
    #[error("a skill of the root {} is refused by `read_only_roots`: {why}", root.display())]
    RootRefused { root: PathBuf, why: String },
    /// The blocking task that judged or read it failed.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Serve(#[from] served::ServeError),
    #[error(transparent)]
    Import(#[from] imported::ImportError),
}

/// Under `read_only_roots`, a folder's root judged again before anything of it is
/// read: why it is refused, if it is.
async fn judged(folder: &Folder) -> Result<(), SkillReadError> {
    if let Some(guard) = folder.guard.clone() {
        let (dir, file) = (folder.dir.clone(), folder.file.clone());
        let refused = tokio::task::spawn_blocking(move || guard.refusal_of(&dir, &file).map(|why| (guard.root.path.clone(), why))).await?;
        if let Some((root, why)) = refused {
            return Err(SkillReadError::RootRefused { root, why });
        }
    }
    Ok(())
}

/// Reads the winning candidate's SKILL.md again and parses it whole: a folder's
/// from disk, its root judged again first under `read_only_roots`; an imported
/// skill's from its mount's server, checked against the listed digest.
async fn load(candidate: &Candidate, providers: &[Provider], client: Client) -> Result<skill::Parsed, imported::Refused> {
    let failed = imported::failed;
    let name = candidate.summary.name.clone();
    match &candidate.place {
        Place::Folder(folder) => {
            judged(folder).await.map_err(|e| failed(e.to_string()))?;
            let file = folder.file.clone();
            let text = tokio::task::spawn_blocking(move || discover::read_skill_file(&file))
                .await
                .map_err(|e| failed(e.to_string()))?
                .map_err(|e| failed(e.to_string()))?;
            skill::parse(&text, &name).map_err(|r| failed(format!("{}:{}: {}", folder.file.display(), r.line, r.reason)))
        }
        Place::Mount { mount, skill } => {
            let text = imported::body(mount, skill, providers, client).await?;
            skill::parse(&text, &name).map_err(|r| failed(format!("{}:{}: {}", skill.uri, r.line, r.reason)))
        }
    }
}

/// A catalog as the `skill` tool lists it, for one `catalog_description_max`.
#[derive(Debug)]
pub struct Rendered {
    max: usize,
    listed: Listed,
}

fn render_listing(catalog: &Catalog, mut definition: Map<String, Json>, max: usize) -> Listed {
    definition.insert("description".into(), Json::from(describe(catalog, max)));
    definition.insert("_meta".into(), json!({ "seam/catalog": catalog.digest }));
    let prompts = catalog
        .skills
        .values()
        .filter(|c| c.summary.user_invocable)
        .map(|c| PromptSpec {
            name: c.name.clone(),
            description: match cut(&c.line, max) {
                std::borrow::Cow::Borrowed(_) => c.line.clone(),
                std::borrow::Cow::Owned(cut) => cut.into(),
            },
        })
        .collect();
    Listed { definition: Arc::new(definition), prompts: Arc::new(prompts) }
}

pub fn list(settings: &SkillSettings, listing: Listing) -> BoxFuture<'static, Listed> {
    let max = settings.catalog_description_max as usize;
    Box::pin(async move {
        let catalog = catalog_for(&listing.providers, &listing.roots).await;
        // Rendered once per catalog and shared by every listing of it. The base
        // definition follows from the settings, whose only field is `max`;
        // an agent with another `max` renders its own each time.
        let rendered =
            catalog.rendered.get_or_init(|| Arc::new(Rendered { max, listed: render_listing(&catalog, listing.definition.clone(), max) }));
        if rendered.max == max {
            return rendered.listed.clone();
        }
        render_listing(&catalog, listing.definition, max)
    })
}

/// The catalog's winners (only the one whose SKILL.md is at URI `only`, when given) as
/// MCP's skills extension lists them (`served`), in name order; a skill that cannot be
/// served (past the extension's limits, unreadable) is left out of this list only.
pub fn skills(_settings: &SkillSettings, listing: Listing, only: Option<String>) -> BoxFuture<'static, Vec<Json>> {
    Box::pin(async move {
        let (catalog, digests) = served_for(&listing.providers, &listing.roots).await;
        let candidates: Vec<Arc<Candidate>> = match &only {
            Some(uri) => served::parse_uri(uri)
                .filter(|(_, path)| path == "SKILL.md")
                .and_then(|(name, _)| catalog.skills.get(name).cloned())
                .into_iter()
                .collect(),
            None => catalog.skills.values().cloned().collect(),
        };
        let entries = tokio::task::spawn_blocking(move || {
            candidates
                .iter()
                // A skill neither the model nor the user may invoke is loadable by no path of seam's: not served either.
                .filter(|candidate| candidate.summary.model_invocable || candidate.summary.user_invocable)
                .filter_map(|candidate| {
                    let name = &candidate.summary.name;
                    let unserved =
                        |why: &dyn std::fmt::Display| tracing::debug!(skill = %name, "not served over MCP's skills extension: {why}");
                    match &candidate.place {
                        // Under `read_only_roots`, its root judged again, as a load does.
                        Place::Folder(folder) => {
                            match folder.guard.as_ref().and_then(|guard| guard.refusal_of(&folder.dir, &folder.file)) {
                                Some(why) => {
                                    unserved(&why);
                                    None
                                }
                                None => served::entry(name, folder, &digests).inspect_err(|why| unserved(why)).ok(),
                            }
                        }
                        Place::Mount { skill, .. } => imported::entry(name, skill).inspect_err(|why| unserved(why)).ok(),
                    }
                })
                .collect()
        });
        entries.await.unwrap_or_default()
    })
}

/// A file (or, with `directory`, a folder) of a skill in the catalog, by its `skill://`
/// URI; its root judged again first.
pub fn read_skill(
    _settings: &SkillSettings,
    listing: Listing,
    uri: String,
    directory: bool,
    hold: ReadHold,
) -> BoxFuture<'static, SkillRead> {
    Box::pin(async move {
        let (name, path) = if directory { served::parse_directory_uri(&uri)? } else { served::parse_uri(&uri)? };
        let (catalog, digests) = served_for(&listing.providers, &listing.roots).await;
        let candidate = catalog.skills.get(name).filter(|c| c.summary.model_invocable || c.summary.user_invocable)?.clone();
        let read = read_candidate(name.to_owned(), candidate.place.clone(), path, directory, &listing.providers, hold, digests).await;
        Some(read.map_err(ProviderError::from))
    })
}

/// A file (or, with `directory`, a folder) at `path` of skill `name`, which is at `place`;
/// a file's size is taken from the read budget (`hold`) before its bytes are read, and
/// a folder's files' digests are kept in `digests`.
async fn read_candidate(
    name: String,
    place: Place,
    path: String,
    directory: bool,
    providers: &[Provider],
    hold: ReadHold,
    digests: Arc<served::Digests>,
) -> Result<Json, SkillReadError> {
    Ok(match place {
        Place::Folder(folder) if directory => {
            judged(&folder).await?;
            tokio::task::spawn_blocking(move || served::directory(&name, &folder, &path, &digests)).await??
        }
        Place::Folder(folder) => {
            judged(&folder).await?;
            let sized = folder.clone();
            let at = path.clone();
            hold.take(tokio::task::spawn_blocking(move || served::file_size(&sized, &at)).await?).await;
            tokio::task::spawn_blocking(move || served::read(&name, &folder, &path, &digests)).await??
        }
        Place::Mount { skill, .. } if directory => imported::directory(&name, &skill, &path)?,
        Place::Mount { mount, skill } => imported::read(&name, &mount, &skill, &path, providers, hold).await?,
    })
}

fn error(code: seam_engine::codes::Code, message: impl std::fmt::Display, name: &str) -> ToolOutput {
    let mut detail = Map::new();
    detail.insert("skill".into(), Json::from(name));
    ToolOutput::typed_error(code, message, detail)
}

/// Why the model may not invoke skill `name`: only the user may, or (with `user-invocable:
/// false` too) no one may.
fn not_model_invocable(name: &str, user_invocable: bool, note: &str) -> String {
    if user_invocable {
        format!("skill `{name}` can be invoked only by the user{note}")
    } else {
        format!("skill `{name}` cannot be invoked: its frontmatter turns off both model and user invocation{note}")
    }
}

pub fn call(_settings: SkillSettings, call: ToolCall) -> BoxFuture<'static, ToolOutput> {
    Box::pin(async move {
        let Some(name) = call.arguments.get("name").and_then(Json::as_str).map(str::to_owned) else {
            return ToolOutput::error(crate::codes::SKILL_INVALID_ARGUMENTS, "`name` (a string) is required");
        };
        let roots = call.roots.get().await;
        let catalog = catalog_for(&call.providers, &roots).await;
        let Some(candidate) = catalog.skills.get(&name).cloned() else {
            return error(crate::codes::SKILL_UNKNOWN, format!("no skill `{name}` is in the catalog"), &name);
        };
        if !candidate.summary.model_invocable {
            return error(crate::codes::SKILL_NOT_MODEL_INVOCABLE, not_model_invocable(&name, candidate.summary.user_invocable, ""), &name);
        }
        let parsed = match load(&candidate, &call.providers, call.client.clone()).await {
            Ok(p) => p,
            Err(refused) => return error(refused.code, refused.message, &name),
        };
        if !parsed.summary.model_invocable {
            let why = not_model_invocable(&name, parsed.summary.user_invocable, " (changed on disk)");
            return error(crate::codes::SKILL_NOT_MODEL_INVOCABLE, why, &name);
        }
        let text = render(&name, &base_of(&candidate), &parsed.body);
        ToolOutput { content: vec![json!({ "type": "text", "text": text })], ..ToolOutput::default() }
    })
}

pub fn get_prompt(settings: SkillSettings, call: PromptCall) -> BoxFuture<'static, Result<Json, PromptError>> {
    let max = settings.catalog_description_max as usize;
    Box::pin(async move {
        let catalog = catalog_for(&call.providers, &call.roots).await;
        let name = call.name;
        let Some(candidate) = catalog.skills.get(&name).filter(|c| c.summary.user_invocable).cloned() else {
            return Err(PromptError::unknown(&name));
        };
        let parsed = load(&candidate, &call.providers, Client::default()).await.map_err(|r| PromptError::new(r.code, r.message))?;
        if !parsed.summary.user_invocable {
            return Err(PromptError::new(
                crate::codes::SKILL_NOT_USER_INVOCABLE,
                format!("skill `{name}` is no longer user-invocable (changed on disk)"),
            ));
        }
        let text = render(&name, &base_of(&candidate), &parsed.body);
        Ok(json!({
            "description": cut(&parsed.summary.catalog_text(), max),
            "messages": [{ "role": "user", "content": { "type": "text", "text": text } }]
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(description: &str, when: Option<&str>) -> skill::Summary {
        skill::Summary {
            name: "a".into(),
            description: description.into(),
            when_to_use: when.map(str::to_owned),
            model_invocable: true,
            user_invocable: true,
        }
    }

    fn catalog_line(summary: &skill::Summary, max: usize) -> String {
        cut(&summary.catalog_text(), max).into_owned()
    }

    #[test]
    fn catalog_lines_are_one_line_and_cut_at_the_limit_with_the_ellipsis_inside() {
        assert_eq!(catalog_line(&summary("Fill\n  PDF\tforms.", None), 100), "Fill PDF forms.");
        assert_eq!(catalog_line(&summary("Fill forms.", Some("a\nPDF")), 100), "Fill forms. When to use: a PDF");
        let ten = summary("abcdefghij", None);
        assert_eq!(catalog_line(&ten, 10), "abcdefghij", "at the limit");
        assert_eq!(catalog_line(&ten, 9), "abcdef...", "one under it");
        assert_eq!(catalog_line(&ten, 9).chars().count(), 9);
        assert_eq!(catalog_line(&summary("ééééé", None), 4), "é...", "characters, not bytes");
    }

    #[test]
    fn the_framing_is_escaped_and_the_body_kept() {
        let out = render("a", "/s/\"q\"&<x>", "Use <b>this</b> & \"that\".");
        assert!(out.starts_with("<skill_content name=\"a\" base=\"/s/&quot;q&quot;&amp;&lt;x&gt;\">\n"), "{out}");
        assert!(out.contains("\n\nUse <b>this</b> & \"that\".\n</skill_content>"), "{out}");
    }

    #[test]
    fn an_empty_catalog_says_so_and_an_unreadable_one_is_not_published_as_empty() {
        let empty = describe(&Catalog::default(), 100);
        assert!(empty.ends_with("<available_skills>\n</available_skills>\nNo skills are available now."), "{empty}");
        let unavailable = describe(&Catalog { unavailable: Some("cannot list /x".into()), ..Catalog::default() }, 100);
        assert!(unavailable.contains("could not be read yet (cannot list /x)") && !unavailable.contains("available_skills"));
    }

    /// Under `read_only_roots` a skill carries its root's guard, and a load
    /// judges the root again: a root made world-writable after the catalog was
    /// built is refused at load, before the next observation would drop it.
    #[tokio::test]
    async fn a_load_refuses_a_root_that_became_unsafe_under_read_only_roots() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("seam-skills-guard-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (root_path, workspace) = (dir.join("root"), dir.join("ws"));
        std::fs::create_dir_all(root_path.join("s")).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::set_permissions(&root_path, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root_path.join("s/SKILL.md"), "---\nname: s\ndescription: d\n---\nbody\n").unwrap();
        let root = discover::Root { path: root_path.clone(), rank: 300, origin: "custom", project: None };
        let guard = Arc::new(crate::trust::Guard { root: root.clone(), workspace: Some(workspace) });
        let candidate = |guard: Option<&Arc<crate::trust::Guard>>| {
            let scan = discover::scan(&root, None, &discover::Dirty::All, guard).unwrap();
            scan.skill("s").expect("a skill").clone()
        };
        let (guarded, unguarded) = (candidate(Some(&guard)), candidate(None));
        assert_eq!(load(&guarded, &[], Client::default()).await.unwrap().body, "body\n", "a safe root loads");
        std::fs::set_permissions(&root_path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = load(&guarded, &[], Client::default()).await.unwrap_err().message;
        assert!(refused.contains("refused by `read_only_roots`") && refused.contains("world-writable"), "{refused}");
        assert_eq!(load(&unguarded, &[], Client::default()).await.unwrap().body, "body\n", "without the option it is only warned about");
        std::fs::set_permissions(&root_path, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(load(&guarded, &[], Client::default()).await.is_ok(), "made safe again, it loads again");

        // A skill whose SKILL.md links out of the root is judged where the link leads:
        // refused at scan when that place is unsafe, and at load when it became unsafe later.
        let elsewhere = dir.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("SKILL.md"), "---\nname: l\ndescription: d\n---\nlinked\n").unwrap();
        std::fs::create_dir_all(root_path.join("l")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("SKILL.md"), root_path.join("l/SKILL.md")).unwrap();
        let scan = discover::scan(&root, None, &discover::Dirty::All, Some(&guard)).unwrap();
        let linked = scan.skill("l").expect("a safe link is a skill").clone();
        assert_eq!(load(&linked, &[], Client::default()).await.unwrap().body, "linked\n");
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = load(&linked, &[], Client::default()).await.unwrap_err().message;
        assert!(refused.contains("links to") && refused.contains("world-writable"), "{refused}");
        let scan = discover::scan(&root, None, &discover::Dirty::All, Some(&guard)).unwrap();
        assert!(scan.skill("l").is_none(), "refused at scan too");
        assert!(scan.invalid().any(|i| i.reason.contains("refused by `read_only_roots`")), "and said why");
        let unguarded = discover::scan(&root, None, &discover::Dirty::All, None).unwrap();
        assert!(unguarded.skill("l").is_some(), "without the option it is read");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
