//! Tasks (SEP-2663, the 2026-07-28 tasks extension) through seam, driven by
//! rmcp's own client (no other SDK installed here speaks SEP-2663) against
//! `tests/peers/tasks-server.mjs`: a client that declares tasks holds the
//! task under an id seam minted, polls it to its result and cancels another;
//! the id is no use to another agent; a client that does not declare tasks
//! gets the result at once.

use rmcp::ServiceExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig, ErrorCode, GetTaskParams, Implementation,
    TaskPayload, TaskStatus,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransport, StreamableHttpClientTransportConfig};
use serde_json::json;

use super::{compose, node_mount};
use crate::support::*;

async fn connect(url: &str, tasks: bool) -> RunningService<RoleClient, ClientConfig> {
    let capabilities = if tasks { ClientCapabilities::builder().enable_tasks().build() } else { ClientCapabilities::default() };
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let transport = StreamableHttpClientTransport::with_client(http, StreamableHttpClientTransportConfig::with_uri(url));
    ClientConfig::new(capabilities, Implementation::new("seam-tasks-test", "0.1.0")).serve(transport).await.unwrap()
}

fn slow(text: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("mcp__tasks__slow").with_arguments(json!({ "text": text }).as_object().unwrap().clone())
}

#[test]
fn a_task_passes_through_under_an_id_seam_minted() {
    let dir = scratch("tasks");
    let file = dir.join("c.yaml");
    let mount = node_mount("tasks", "tasks-server.mjs");
    // A budget on the tool: a task's result is cut as a call's is.
    let rest = "tools:\n  \"mcp__tasks__slow\": { max_output_chars: 6 }\nagents:\n  other:\n    tools: { \"mcp__tasks__*\": true }\n";
    compose(&file, std::slice::from_ref(&mount), rest);
    let seam = HttpSeam::start(&file, &["--debounce", "50ms"]);
    let url = format!("{}/mcp", seam.base);
    let other_url = format!("{}/agents/other/mcp", seam.base);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (client, other, plain, kept) = runtime.block_on(async {
        let client = connect(&url, true).await;
        let declared = client.peer().peer_info().unwrap().capabilities.supports_tasks();
        assert!(declared, "the mount declares tasks, so seam declares them to the agents that see it");

        let CallToolResponse::Task(task) = client.peer().call_tool_once(slow("hi")).await.unwrap() else {
            panic!("a client that declares tasks gets the server's task")
        };
        let id = task.task.task_id.clone();
        assert!(!id.starts_with("upstream-"), "the server's own id stays behind seam: {id}");
        assert_eq!(task.task.status, TaskStatus::Working);
        let first = client.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap();
        assert_eq!((first.task.task.task_id.as_str(), first.task.status()), (id.as_str(), TaskStatus::Working));
        let second = client.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap();
        let TaskPayload::Completed { result } = second.task.payload else { panic!("completed at the second poll: {second:?}") };
        assert_eq!(result["content"][0]["text"], "done: ", "cut at max_output_chars: {result:?}");
        assert!(result["content"][1]["text"].as_str().unwrap().starts_with("[seam: output truncated"), "{result:?}");

        // Another agent, though it sees the mount, cannot reach this agent's task; nor can anyone by the server's id.
        let unknown = |e: ServiceError| match e {
            ServiceError::McpError(e) => e.code == ErrorCode::INVALID_PARAMS,
            _ => false,
        };
        let other = connect(&other_url, true).await;
        assert!(unknown(other.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap_err()));
        assert!(unknown(client.peer().get_task(GetTaskParams::new("upstream-1")).await.unwrap_err()));
        // A 100 KB id is refused quoting a prefix of it, not all of it.
        match client.peer().get_task(GetTaskParams::new("x".repeat(100_000))).await.unwrap_err() {
            ServiceError::McpError(e) => assert!(e.message.len() < 300 && e.message.contains('…'), "{} bytes", e.message.len()),
            other => panic!("{other}"),
        }

        let CallToolResponse::Task(second_task) = client.peer().call_tool_once(slow("stop")).await.unwrap() else { panic!("a task") };
        let id = second_task.task.task_id;
        client.peer().cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
        let cancelled = client.peer().get_task(GetTaskParams::new(id)).await.unwrap();
        assert_eq!(cancelled.task.status(), TaskStatus::Cancelled);

        // A client that declares no tasks is answered at once: seam asks the server for no task on its behalf.
        let plain = connect(&url, false).await;
        let CallToolResponse::Complete(result) = plain.peer().call_tool_once(slow("now")).await.unwrap() else {
            panic!("a plain result for a client without tasks")
        };
        assert_eq!(result.content[0].as_text().unwrap().text, "done: ");

        let CallToolResponse::Task(kept) = client.peer().call_tool_once(slow("again")).await.unwrap() else { panic!("a task") };
        (client, other, plain, kept.task.task_id)
    });

    // A task lives on its server's connection: once the mount is built anew, its id is refused, saying why.
    let pid = seam.status()["mounts"]["tasks"]["pid"].clone();
    let rebuilt = mount.replace("    args:", "    env: { GENERATION: \"2\" }\n    args:");
    compose(&file, &[rebuilt], rest);
    wait_until("the mount built anew and ready", || {
        let mount = seam.status()["mounts"]["tasks"].clone();
        mount["pid"] != pid && mount["state"] == "ready"
    });
    runtime.block_on(async {
        let ended = client.peer().get_task(GetTaskParams::new(kept)).await.unwrap_err();
        assert!(ended.to_string().contains("ended with its server's connection"), "{ended}");
        for client in [client, other, plain] {
            client.cancel().await.unwrap();
        }
    });
    assert!(seam.terminate().success());
}
