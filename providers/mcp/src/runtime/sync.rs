//! List sync: every page of tools, prompts, resources and skills fetched aside,
//! imported under the mount's filters and names, and published whole; a list kept for its TTL.

use super::*;

impl McpMount {
    /// Fetches every page of every list the server declares and swaps the
    /// whole map in, or keeps the previous one. A list the server did not say
    /// `changed`, and gave with a caching hint not yet lapsed (`ttlMs`,
    /// 2026-07-28), is the one it last gave, not asked again.
    pub(super) async fn sync(&self, peer: &Peer<RoleClient>, changed: Changed) -> Result<(), SyncError> {
        let info = peer.peer_info();
        let declares = |what: fn(&rmcp::model::ServerCapabilities) -> bool| info.as_ref().is_some_and(|i| what(&i.capabilities));
        let now = Instant::now();
        // A list said to change is stale from now on, whether or not this sync succeeds.
        let (fresh, last, last_tools) = {
            let mut listing = self.listing.lock().expect("listing lock");
            let FreshUntil { tools, prompts, resources } = &mut listing.fresh_until;
            for (changed, until) in [(changed.tools, tools), (changed.prompts, prompts), (changed.resources, resources)] {
                if changed {
                    *until = None;
                }
            }
            (listing.fresh_until, listing.offerings.clone(), listing.tools.clone())
        };
        let reused = |until: Option<Instant>| until.is_some_and(|until| until > now);
        let mut next_fresh = FreshUntil::default();
        // A server that declares no tools (one that serves only prompts, resources or skills) is not asked for them.
        let tools = if !declares(|c| c.tools.is_some()) {
            Vec::new()
        } else if reused(fresh.tools) {
            next_fresh.tools = fresh.tools;
            last_tools.as_ref().clone()
        } else {
            let (tools, ttl_ms) = list_tools(peer).await?;
            next_fresh.tools = fresh_until(now, ttl_ms);
            tools
        };
        let mut offerings = self.extensions_and_skills(peer, &last, changed).await;
        if declares(|c| c.prompts.is_some()) && reused(fresh.prompts) {
            next_fresh.prompts = fresh.prompts;
            offerings.prompts = last.prompts.clone();
        } else if declares(|c| c.prompts.is_some()) {
            let (prompts, ttl_ms) = list_prompts(peer).await?;
            (offerings.prompts, next_fresh.prompts) = (prompts, fresh_until(now, ttl_ms));
        }
        if declares(|c| c.resources.is_some()) && reused(fresh.resources) {
            next_fresh.resources = fresh.resources;
            (offerings.resources, offerings.templates) = (last.resources.clone(), last.templates.clone());
        } else if declares(|c| c.resources.is_some()) {
            let (resources, templates, ttl_ms) = list_resources(peer).await?;
            (offerings.resources, offerings.templates, next_fresh.resources) = (resources, templates, fresh_until(now, ttl_ms));
        }
        let (tools, offerings) = (Arc::new(tools), Arc::new(offerings));
        // Imported and published under the listing lock, as `reconfigure` does: what a
        // sync imported under the old filters and pin can never be published after what a
        // reconfigure imported under the new ones.
        let mut listing = self.listing.lock().expect("listing lock");
        let next = Names::of(self).import(&listing.filters, &tools, &offerings)?;
        (listing.tools, listing.offerings, listing.fresh_until) = (tools, offerings, next_fresh);
        self.publish(next);
        Ok(())
    }

    /// What the server's handshake said beyond its lists: its instructions, the
    /// extensions seam carries (the others withheld), and its skills when the mount
    /// imports them (listed again only when its resources changed: a server says its
    /// skills changed as it says its resources did; an unreadable list keeps the last).
    async fn extensions_and_skills(&self, peer: &Peer<RoleClient>, last: &Offerings, changed: Changed) -> Offerings {
        let info = peer.peer_info();
        let instructions = info.as_ref().and_then(|i| i.instructions.as_deref()).map(Arc::from);
        let mut offerings = Offerings { instructions, ..Offerings::default() };
        let mut serves_skills = false;
        for (name, settings) in info.as_ref().and_then(|i| i.capabilities.extensions.as_ref()).into_iter().flatten() {
            if CARRIED_EXTENSIONS.contains(&name.as_str()) {
                offerings.extensions.insert(name.clone(), Json::Object(settings.clone()));
            } else if name == rmcp::model::SKILLS_EXTENSION_ID {
                serves_skills = true;
            } else {
                offerings.withheld_extensions.push(name.clone());
            }
        }
        if !serves_skills {
            return offerings;
        }
        if !self.common.skills.import {
            offerings.skills_left_out.push("the server serves skills: `skills: { import: true }` adds them to the `skill` tool".into());
        } else if !changed.resources {
            (offerings.skills, offerings.skills_left_out) = (last.skills.clone(), last.skills_left_out.clone());
        } else {
            match import_skills(peer).await {
                Ok((skills, left_out)) => (offerings.skills, offerings.skills_left_out) = (Arc::new(skills), left_out),
                Err(why) => {
                    // Nothing of an unreadable list is published: the last good one stays.
                    offerings.skills = last.skills.clone();
                    offerings.skills_left_out = vec![format!("skills not imported again ({why}): the last list stays")];
                }
            }
        }
        offerings
    }

    /// Swaps a new tool map in whole; tells the engine when clients would see a difference.
    /// Called with the listing lock held, so that imports are published in the order they
    /// were made (the lock order is listing, then imports).
    pub(super) fn publish(&self, next: Imports) {
        let changed = {
            let mut current = self.imports.lock().expect("imports lock");
            if current.colliding != next.colliding {
                for (name, raws) in &next.colliding {
                    tracing::warn!(mount = %self.id, "tools {raws:?} all map to the name `{name}`: they are left out, the server's other tools are served");
                }
                self.cx.status.notify();
            }
            if current.held != next.held {
                for held in next.held.iter().filter(|h| !current.held.contains(h)) {
                    tracing::warn!(mount = %self.id, kind = held.kind, name = %held.raw, "{} held by the mount's pin: {}", held.noun(), held.why);
                }
                self.cx.status.notify();
            }
            let changed = current.specs != next.specs || current.offers != next.offers;
            *current = Arc::new(next);
            changed
        };
        if changed {
            self.cx.changes.notify();
        }
    }
}

/// How one mount names what its server offers: its id and its `naming`. A
/// running mount imports through it, and so does a test's stand-in
/// (`stand_in`), so that both name and filter alike.
#[derive(Clone, Copy)]
pub(super) struct Names<'m> {
    pub(super) id: &'m str,
    pub(super) naming: crate::Naming,
}

impl<'m> Names<'m> {
    pub(super) fn of(mount: &'m McpMount) -> Names<'m> {
        Names { id: &mount.id, naming: mount.common.naming }
    }

    /// The server's tools as clients see them. A name two of them map to (`a.b`
    /// hashes to a clean name the server also lists) is left out, those tools
    /// only: a call could not tell which was meant, and the others are still
    /// good. (A raw name listed twice fails the sync: the server contradicts itself.)
    pub(super) fn import(&self, filters: &Filters, tools: &[rmcp::model::Tool], offerings: &Offerings) -> Result<Imports, SyncError> {
        let filter = &filters.tools;
        let mut raw_seen = HashSet::new();
        let mut specs = Vec::new();
        let mut by_name: HashMap<String, Imported> = HashMap::new();
        let mut colliding: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
        let mut held = Vec::new();
        let mut unrewritable = Vec::new();
        for tool in tools {
            let raw = tool.name.to_string();
            if !raw_seen.insert(raw.clone()) {
                return Err(SyncError::ToolListedTwice { name: raw });
            }
            if !filter.admits(&raw) {
                continue;
            }
            let upstream = serde_json::to_value(tool).map_err(|_| SyncError::ToolWithoutJson { name: raw.clone() })?;
            if let Err(h) = filters.pin.admits("tools", &raw, &upstream) {
                held.push(h);
                continue;
            }
            let rewrite = filters.rewrite.get(&raw);
            let name = self.client_name(rewrite.and_then(|w| w.name.as_deref()).unwrap_or(&raw));
            if let Some(kept) = colliding.get_mut(&name) {
                kept.push(raw);
                continue;
            }
            if let Some(first) = by_name.remove(&name) {
                colliding.insert(name, vec![first.raw, raw]);
                continue;
            }
            let output =
                tool.output_schema.as_ref().and_then(|s| jsonschema::validator_for(&Json::Object((**s).clone())).ok()).map(Arc::new);
            let Json::Object(mut definition) = upstream else { return Err(SyncError::ToolWithoutJson { name: raw }) };
            definition.insert("name".into(), Json::String(name.clone()));
            if let Some(w) = rewrite
                && let Err(why) = rewritten(&mut definition, w)
            {
                unrewritable.push(format!("tool `{raw}` is left out: its `rewrite` cannot apply: {why}"));
                continue;
            }
            let ruled_as = rewrite.and_then(|w| w.name.as_ref()).map(|_| self.client_name(&raw));
            let arguments = rewrite.map(|w| &w.arguments).filter(|a| **a != crate::ArgumentsRewrite::default()).cloned().map(Arc::new);
            by_name.insert(name.clone(), Imported { raw, arguments, output });
            specs.push(ToolSpec { name, definition: Arc::new(definition), ruled_as });
        }
        specs.retain(|s| !colliding.contains_key(&s.name));
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let colliding: Vec<(String, Vec<String>)> = colliding
            .into_iter()
            .map(|(name, mut raws)| {
                raws.sort();
                (name, raws)
            })
            .collect();
        let (prompts, by_prompt_name, colliding_prompts) = self.import_prompts(&offerings.prompts, filters, &mut held)?;
        let mut colliding = colliding;
        colliding.extend(colliding_prompts);
        let resources = definitions(offerings.resources.iter().filter(|r| filters.resources.admits(&r.uri)), |r| r.uri.clone())?;
        let pinned = |t: &&rmcp::model::ResourceTemplate| match serde_json::to_value(t) {
            Ok(definition) => filters.pin.admits("resource_templates", &t.uri_template, &definition),
            Err(_) => Ok(()),
        };
        let mut admitted = Vec::new();
        for t in offerings.templates.iter().filter(|t| filters.resources.admits(&t.uri_template)) {
            match pinned(&t) {
                Ok(()) => admitted.push(t),
                Err(h) => held.push(h),
            }
        }
        let templates = definitions(admitted.into_iter(), |t| t.uri_template.clone())?;
        // An MCP Apps view a served tool names is readable through this mount, listed or not.
        let mut views: Vec<String> = specs
            .iter()
            .filter_map(|spec| spec.definition.get("_meta")?.get("ui")?.get("resourceUri")?.as_str().map(str::to_owned))
            .collect();
        views.sort();
        views.dedup();
        let offers = Offers {
            prompts,
            resources,
            templates,
            instructions: offerings.instructions.clone(),
            extensions: offerings.extensions.clone(),
            views,
            skills: offerings.skills.clone(),
        };
        Ok(Imports { specs: Arc::new(specs), by_name, colliding, held, unrewritable, offers: Arc::new(offers), prompts: by_prompt_name })
    }

    /// The name clients see for the server's tool or prompt `raw` (`naming`).
    pub(super) fn client_name(&self, raw: &str) -> String {
        match self.naming {
            crate::Naming::Prefixed => tool_name(self.id, raw),
            crate::Naming::Raw => raw.to_owned(),
        }
    }

    /// The server's prompts that pass the filter, named as tools are; a final
    /// name two prompts map to is left out, as for tools.
    #[allow(clippy::type_complexity)]
    pub(super) fn import_prompts(
        &self,
        prompts: &[rmcp::model::Prompt],
        filters: &Filters,
        held: &mut Vec<Held>,
    ) -> Result<(Vec<Offered>, HashMap<String, String>, Vec<(String, Vec<String>)>), SyncError> {
        let mut raws: std::collections::BTreeMap<String, Vec<&rmcp::model::Prompt>> = std::collections::BTreeMap::new();
        let mut raw_seen = HashSet::new();
        for prompt in prompts {
            if !raw_seen.insert(prompt.name.as_str()) {
                return Err(SyncError::PromptListedTwice { name: prompt.name.clone() });
            }
            if !filters.prompts.admits(&prompt.name) {
                continue;
            }
            let upstream = serde_json::to_value(prompt).map_err(|_| SyncError::PromptWithoutJson { name: prompt.name.clone() })?;
            match filters.pin.admits("prompts", &prompt.name, &upstream) {
                Ok(()) => raws.entry(self.client_name(&prompt.name)).or_default().push(prompt),
                Err(h) => held.push(h),
            }
        }
        let (mut offered, mut by_name, mut colliding) = (Vec::new(), HashMap::new(), Vec::new());
        for (name, same) in raws {
            if let [prompt] = same[..] {
                let mut definition = match serde_json::to_value(prompt) {
                    Ok(Json::Object(o)) => o,
                    _ => return Err(SyncError::PromptWithoutJson { name: prompt.name.clone() }),
                };
                definition.insert("name".into(), Json::String(name.clone()));
                by_name.insert(name.clone(), prompt.name.clone());
                offered.push(Offered { key: name, definition: Arc::new(definition) });
            } else {
                let mut names: Vec<String> = same.iter().map(|p| p.name.clone()).collect();
                names.sort();
                colliding.push((name, names));
            }
        }
        Ok((offered, by_name, colliding))
    }
}

/// Until when a list given `now` with caching hint `ttl_ms` may be reused: `ttlMs`
/// later, at most `MAX_LIST_TTL`; never for no hint or `0`.
pub(super) fn fresh_until(now: Instant, ttl_ms: Option<u64>) -> Option<Instant> {
    ttl_ms.filter(|ms| *ms > 0).map(|ms| now + Duration::from_millis(ms).min(MAX_LIST_TTL))
}

/// Every page of the server's tools, and its caching hint.
async fn list_tools(peer: &Peer<RoleClient>) -> Result<(Vec<rmcp::model::Tool>, Option<u64>), SyncError> {
    all_pages::<rmcp::model::ListToolsRequestMethod, _>(
        peer,
        |params| ClientRequest::ListToolsRequest(list_request(params)),
        |page| match page {
            ServerResult::ListToolsResult(page) => Some((page.tools, page.next_cursor, page.ttl_ms)),
            _ => None,
        },
        usize::MAX,
    )
    .await
}

/// Every page of the server's prompts, and its caching hint.
async fn list_prompts(peer: &Peer<RoleClient>) -> Result<(Vec<rmcp::model::Prompt>, Option<u64>), SyncError> {
    all_pages::<rmcp::model::ListPromptsRequestMethod, _>(
        peer,
        |params| ClientRequest::ListPromptsRequest(list_request(params)),
        |page| match page {
            ServerResult::ListPromptsResult(page) => Some((page.prompts, page.next_cursor, page.ttl_ms)),
            _ => None,
        },
        usize::MAX,
    )
    .await
}

/// Every page of the server's resources and of its templates: the two lists are one,
/// reused while both are fresh (the shorter caching hint).
async fn list_resources(
    peer: &Peer<RoleClient>,
) -> Result<(Vec<rmcp::model::Resource>, Vec<rmcp::model::ResourceTemplate>, Option<u64>), SyncError> {
    let (resources, resources_ttl_ms) = all_pages::<rmcp::model::ListResourcesRequestMethod, _>(
        peer,
        |params| ClientRequest::ListResourcesRequest(list_request(params)),
        |page| match page {
            ServerResult::ListResourcesResult(page) => Some((page.resources, page.next_cursor, page.ttl_ms)),
            _ => None,
        },
        usize::MAX,
    )
    .await?;
    let (templates, templates_ttl_ms) = all_pages::<rmcp::model::ListResourceTemplatesRequestMethod, _>(
        peer,
        |params| ClientRequest::ListResourceTemplatesRequest(list_request(params)),
        |page| match page {
            ServerResult::ListResourceTemplatesResult(page) => Some((page.resource_templates, page.next_cursor, page.ttl_ms)),
            _ => None,
        },
        usize::MAX,
    )
    .await?;
    Ok((resources, templates, resources_ttl_ms.zip(templates_ttl_ms).map(|(a, b)| a.min(b))))
}

/// A `tools/list`-shaped request for one page.
pub(super) fn list_request<M: Default>(params: PaginatedRequestParams) -> rmcp::model::RequestOptionalParam<M, PaginatedRequestParams> {
    rmcp::model::RequestOptionalParam { method: M::default(), params: Some(params), extensions: Default::default() }
}

/// Every page of one list, sent as plain requests (rmcp's own `list_*` may
/// answer a failure from its cache), and how long the whole may be reused (the
/// shortest `ttlMs` of its pages, 2026-07-28; none from older servers); a
/// repeated cursor is an error. Of a list beside the tools, a server that
/// answers "method not found" lists nothing: servers that declare `resources`
/// without templates do.
pub(super) async fn all_pages<M: rmcp::model::ConstString, T>(
    peer: &Peer<RoleClient>,
    request: impl Fn(PaginatedRequestParams) -> ClientRequest,
    page: impl Fn(ServerResult) -> Option<(Vec<T>, Option<String>, Option<u64>)>,
    most: usize,
) -> Result<(Vec<T>, Option<u64>), SyncError> {
    let method = M::VALUE;
    let mut items = Vec::new();
    let mut ttl_ms: Option<u64> = Some(u64::MAX);
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    loop {
        let answer = match peer.send_request(request(PaginatedRequestParams::default().with_cursor(cursor.clone()))).await {
            Err(ServiceError::McpError(e))
                if e.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND
                    && method != <rmcp::model::ListToolsRequestMethod as rmcp::model::ConstString>::VALUE =>
            {
                tracing::debug!("the server does not answer {method}: it lists nothing there");
                return Ok((items, None));
            }
            answer => answer.map_err(|source| SyncError::ListFailed { method, source })?,
        };
        let (listed, next, page_ttl_ms) = page(answer).ok_or(SyncError::UnexpectedAnswer { method })?;
        items.extend(listed);
        // A page without a hint makes the whole list one to ask for each time.
        ttl_ms = ttl_ms.zip(page_ttl_ms).map(|(a, b)| a.min(b));
        if items.len() > most {
            return Err(SyncError::PastBound { method, most });
        }
        match next {
            None => return Ok((items, ttl_ms)),
            Some(next) if !seen.insert(next.clone()) => return Err(SyncError::RepeatedCursor { method, cursor: next }),
            Some(next) => cursor = Some(next),
        }
    }
}

/// The skills a server lists over MCP's skills extension, by name, and what of its
/// list is left out, each with why: an entry the extension's rules refuse
/// (`Skill::validate`), one whose files are `dynamic` (no digest to check a body
/// against), a name listed twice (the first URI is kept). A list past
/// `MAX_IMPORTED_SKILLS` is an error.
pub(super) async fn import_skills(peer: &Peer<RoleClient>) -> Result<(Vec<ImportedSkill>, Vec<String>), SyncError> {
    let listed = all_pages::<rmcp::model::ListSkillsRequestMethod, _>(
        peer,
        |params| ClientRequest::ListSkillsRequest(list_request(params)),
        |page| match page {
            ServerResult::ListSkillsResult(page) => Some((page.skills, page.next_cursor, page.ttl_ms)),
            _ => None,
        },
        MAX_IMPORTED_SKILLS,
    )
    .await?
    .0;
    let mut left_out = Vec::new();
    let mut skills = Vec::new();
    for skill in listed {
        if let Err(e) = skill.validate() {
            left_out.push(format!("skill `{}`: {e}", skill.uri));
            continue;
        }
        let rmcp::model::SkillResources::Files(files) = &skill.resources else {
            left_out.push(format!("skill `{}`: its files are `dynamic`, with no digest to check its body against", skill.uri));
            continue;
        };
        let Some(skill_md) = files.iter().find(|file| file.uri == skill.uri) else {
            left_out.push(format!("skill `{}`: its manifest does not list its SKILL.md", skill.uri));
            continue;
        };
        let Ok(Json::Object(frontmatter)) = serde_json::to_value(&skill.frontmatter) else {
            left_out.push(format!("skill `{}`: its frontmatter has no JSON form", skill.uri));
            continue;
        };
        skills.push(ImportedSkill {
            name: skill.name().to_owned(),
            uri: skill.uri.clone(),
            digest: skill_md.digest.clone(),
            size: skill_md.size,
            frontmatter,
            files: files.iter().map(|f| ImportedFile { uri: f.uri.clone(), digest: f.digest.clone(), size: f.size }).collect(),
        });
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.uri.cmp(&b.uri)));
    skills.dedup_by(|later, first| {
        let twice = later.name == first.name;
        if twice {
            left_out.push(format!("skill `{}`: the name `{}` is also `{}`'s, which is kept", later.uri, later.name, first.uri));
        }
        twice
    });
    Ok((skills, left_out))
}

/// Each item's MCP JSON, keyed and sorted; two items with one key are an error (the server contradicts itself).
pub(super) fn definitions<'a, T: serde::Serialize + 'a>(
    items: impl Iterator<Item = &'a T>,
    key: impl Fn(&T) -> String,
) -> Result<Vec<Offered>, SyncError> {
    let mut out = Vec::new();
    for item in items {
        let Ok(Json::Object(definition)) = serde_json::to_value(item) else { return Err(SyncError::WithoutJson { key: key(item) }) };
        out.push(Offered { key: key(item), definition: Arc::new(definition) });
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    if let Some(twice) = out.windows(2).find(|w| w[0].key == w[1].key) {
        return Err(SyncError::ListedTwice { key: twice[0].key.clone() });
    }
    Ok(out)
}

/// A tool's definition as its `rewrite` shows it to clients: its description replaced or
/// appended to, and its input schema without the arguments that are fixed or hidden
/// (and no longer requiring those given a default, which each property then shows).
/// Why it cannot be: a hidden argument the server requires with no value, or a schema
/// that is no longer one.
fn rewritten(definition: &mut Map<String, Json>, w: &crate::Rewrite) -> Result<(), String> {
    match &w.description {
        Some(crate::DescriptionRewrite::Replace(text)) => {
            definition.insert("description".into(), Json::from(text.as_str()));
        }
        Some(crate::DescriptionRewrite::Append { append }) => {
            let mut text = definition.get("description").and_then(Json::as_str).unwrap_or_default().to_owned();
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(append);
            definition.insert("description".into(), Json::from(text));
        }
        None => {}
    }
    let a = &w.arguments;
    if a.fixed.is_empty() && a.hidden.is_empty() && a.defaults.is_empty() {
        return Ok(());
    }
    let Some(Json::Object(schema)) = definition.get_mut("inputSchema") else { return Err("it has no input schema".into()) };
    let required: Vec<String> =
        schema.get("required").and_then(Json::as_array).into_iter().flatten().filter_map(|r| r.as_str().map(str::to_owned)).collect();
    if let Some(key) = a.hidden.iter().find(|k| required.contains(k) && !a.fixed.contains_key(*k) && !a.defaults.contains_key(*k)) {
        return Err(format!("argument `{key}` is required by the server, and hidden with no value (fix it or give it a default)"));
    }
    let gone = |k: &str| a.fixed.contains_key(k) || a.hidden.iter().any(|h| h == k);
    if let Some(Json::Object(properties)) = schema.get_mut("properties") {
        properties.retain(|k, _| !gone(k));
        for (key, value) in &a.defaults {
            if let Some(Json::Object(property)) = properties.get_mut(key) {
                property.insert("default".into(), value.clone());
            }
        }
    }
    if let Some(Json::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|k| !gone(k) && !a.defaults.contains_key(k)));
    }
    jsonschema::validator_for(&Json::Object(schema.clone()))
        .map(drop)
        .map_err(|e| format!("its rewritten input schema is not JSON Schema: {e}"))
}

/// A call's arguments as the server is sent them (`rewrite`): fixed ones set (a client's
/// value overridden, and logged), hidden ones a client sent dropped, defaults filled in.
pub(super) fn rewritten_arguments(
    mount: &str,
    tool: &str,
    a: &crate::ArgumentsRewrite,
    mut arguments: Map<String, Json>,
) -> Map<String, Json> {
    for key in &a.hidden {
        if !a.fixed.contains_key(key) && !a.defaults.contains_key(key) && arguments.remove(key).is_some() {
            tracing::info!(mount, tool, argument = %key, "a hidden argument the client sent was dropped");
        }
    }
    for (key, value) in &a.fixed {
        if let Some(sent) = arguments.insert(key.clone(), value.clone()).filter(|sent| sent != value) {
            tracing::info!(mount, tool, argument = %key, sent = %sent, "a fixed argument the client sent was overridden");
        }
    }
    for (key, value) in &a.defaults {
        arguments.entry(key.clone()).or_insert_with(|| value.clone());
    }
    arguments
}
