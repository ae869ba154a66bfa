//! What seam answers a client that sent what it does not take: a URI past
//! [`MAX_URI_BYTES`], params that do not read as their method's, a subscription or
//! listen stream past a bound. Each answer quotes at most a prefix of what was sent
//! (`seam_engine::runtime::echoed`).

use rmcp::ErrorData as McpError;
use serde_json::Value as Json;

/// The longest URI seam reads or subscribes to for a client: a longer one is refused
/// before anything else, and not quoted back (a listen stream leaves it out of what it
/// accepted, which its acknowledgement echoes).
pub const MAX_URI_BYTES: usize = 8192;

/// A URI past [`MAX_URI_BYTES`] refused, quoting a prefix of it.
pub fn uri_too_long(uri: &str) -> Option<McpError> {
    (uri.len() > MAX_URI_BYTES).then(|| {
        let message = format!("a URI of {} bytes, past the {MAX_URI_BYTES} seam reads: `{}`", uri.len(), seam_engine::runtime::echoed(uri));
        McpError::invalid_params(message, None)
    })
}

/// A request rmcp could not read as one of its own: a method it does not know is
/// -32601, as rmcp answers it; one it knows whose params do not read as that method's
/// (a `requestState` or `taskId` of the wrong JSON type) is -32602, saying why. Either
/// quotes at most a prefix of what the client sent.
pub fn unreadable(request: &rmcp::model::CustomRequest) -> McpError {
    let method = seam_engine::runtime::echoed(&request.method);
    match malformed_params(&request.method, request.params.clone().unwrap_or(Json::Null)) {
        None => McpError::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, method.into_owned(), None),
        Some(why) => McpError::invalid_params(format!("{method}: invalid params: {}", seam_engine::runtime::echoed(&why)), None),
    }
}

/// Why `params` do not read as the params of `method`, a method rmcp reads (`None` for
/// a method it does not know). (`logging/setLevel` is deprecated by SEP-2577, and still read.)
#[allow(deprecated)]
fn malformed_params(method: &str, params: Json) -> Option<String> {
    use rmcp::model::*;
    macro_rules! why {
        ($($method:ty => $params:ty),* $(,)?) => {
            $(
                if method == <$method as ConstString>::VALUE {
                    return Some(match serde_json::from_value::<$params>(params) {
                        Err(e) => e.to_string(),
                        Ok(_) => format!("the request does not read as `{method}`"),
                    });
                }
            )*
        };
    }
    why!(
        InitializeResultMethod => InitializeRequestParams,
        DiscoverRequestMethod => DiscoverRequestParams,
        CompleteRequestMethod => CompleteRequestParams,
        SetLevelRequestMethod => SetLevelRequestParams,
        GetPromptRequestMethod => GetPromptRequestParams,
        ListPromptsRequestMethod => Option<PaginatedRequestParams>,
        ListResourcesRequestMethod => Option<PaginatedRequestParams>,
        ListResourceTemplatesRequestMethod => Option<PaginatedRequestParams>,
        ReadResourceRequestMethod => ReadResourceRequestParams,
        SubscriptionsListenRequestMethod => SubscriptionsListenRequestParams,
        SubscribeRequestMethod => SubscribeRequestParams,
        UnsubscribeRequestMethod => UnsubscribeRequestParams,
        CallToolRequestMethod => CallToolRequestParams,
        ListToolsRequestMethod => Option<PaginatedRequestParams>,
        GetTaskMethod => GetTaskParams,
        UpdateTaskMethod => UpdateTaskParams,
        CancelTaskMethod => CancelTaskParams,
        ListSkillsRequestMethod => Option<PaginatedRequestParams>,
        GetSkillRequestMethod => GetSkillRequestParams,
        ReadResourceDirectoryRequestMethod => ReadResourceDirectoryRequestParams,
        PingRequestMethod => Option<Json>,
    );
    None
}

/// A subscription or listen stream refused at a bound: `SUBSCRIPTIONS_EXCEEDED`, in `data.code`.
pub fn subscriptions_exceeded(why: String) -> McpError {
    let code = seam_engine::codes::SUBSCRIPTIONS_EXCEEDED;
    McpError::invalid_request(format!("{code}: {why}"), Some(serde_json::json!({ "code": code.code })))
}
