//! `seam call FILE TOOL --args JSON`: one tool call through the same engine as
//! `serve`, printing the MCP `CallToolResult` JSON. Exit 0 on success, 1 when the
//! result is an error, 2 on usage or composition errors.

use std::path::PathBuf;
use std::time::Duration;

use seam_engine::Engine;
use seam_engine::deploy::CallContext;

use crate::Exit;

pub fn run(engine: Engine, file: PathBuf, tool: String, args: String, agent: String) -> Result<Exit, crate::error::Error> {
    let arguments = match serde_json::from_str(&args) {
        Ok(serde_json::Value::Object(o)) => o,
        Ok(_) => return Err(crate::error::Error::ArgsNotAnObject),
        Err(e) => return Err(crate::error::Error::ArgsNotJson(e)),
    };
    let runtime = super::runtime()?;
    runtime.block_on(async move {
        let Ok(deployment) = super::serve::start(engine, &file, Duration::from_secs(30), super::serve::Reach::Local, Vec::new()).await
        else {
            return Ok(Exit::UsageOrIo);
        };
        let known = deployment.live().is_some_and(|g| g.resolved.agents.contains_key(&agent));
        if !known {
            deployment.shutdown().await;
            return Err(crate::error::Error::UnknownAgent { agent, file });
        }
        let mut output = deployment.call(&deployment.caller(&agent, None), &tool, arguments, CallContext::default()).await;
        deployment.shutdown().await;
        let exit = if output.is_error { Exit::Invalid } else { Exit::Valid };
        // A mount's result may come unread (`Payload`): read it to print it.
        output.read();
        super::print(&format!("{}\n", serde_json::to_string_pretty(&output).expect("serializable")));
        Ok(exit)
    })
}
