//! The `subprocess` service: the one way any mount starts a child process.
//!
//! Every spawn (LSP and MCP alike) goes through here, so the rules hold for all
//! of them: the environment is cleared and only allowlisted variables of seam's
//! own environment pass (`services.subprocess.env_passthrough`, plus the mount's
//! own `env_passthrough`), then the mount's explicit `env` is applied; the
//! `runner` argv prefix (a sandbox) goes in front of the command; the child leads
//! its own process group, so a kill reaches whatever it started (`npx` → `node`),
//! and it is killed if its handle is dropped, and (Linux's parent-death
//! signal) when seam itself dies, even by SIGKILL, which drops nothing.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::model::{EnvName, Spawn, Subprocess};

/// The service as a generation resolved it.
#[derive(Clone, Debug, Default)]
pub struct SubprocessService {
    config: Subprocess,
}

/// A running child: its pipes (taken once) and the handle that proves it ended.
pub struct Child {
    handle: Box<dyn ChildWrapper>,
    pub pid: u32,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

impl SubprocessService {
    pub fn new(config: Subprocess) -> SubprocessService {
        SubprocessService { config }
    }

    /// The argv a spawn runs: the runner prefix, then the command and its args.
    pub fn argv(&self, spawn: &Spawn) -> Vec<String> {
        self.config.runner.iter().cloned().chain([spawn.command.clone()]).chain(spawn.args.iter().cloned()).collect()
    }

    /// The child's whole environment: allowlisted variables that are set in seam's
    /// environment (`lookup`), then the mount's explicit `env` over them.
    pub fn environment(
        &self,
        spawn: &Spawn,
        extra_passthrough: &[EnvName],
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Vec<(String, String)> {
        let mut env: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
        for name in self.config.env_passthrough.iter().chain(extra_passthrough) {
            if let Some(value) = lookup(&name.0) {
                env.insert(name.0.clone(), value);
            }
        }
        env.extend(spawn.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        env.into_iter().collect()
    }

    /// Starts `spawn` with piped stdin, stdout and stderr.
    pub fn spawn(&self, spawn: &Spawn, extra_passthrough: &[EnvName], cwd: Option<&Path>) -> std::io::Result<Child> {
        let argv = self.argv(spawn);
        let mut command = tokio::process::Command::new(&argv[0]);
        command.args(&argv[1..]).env_clear().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.envs(self.environment(spawn, extra_passthrough, |name| std::env::var(name).ok()));
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: between fork and exec only async-signal-safe calls are made
        // (prctl, getppid, _exit). The signal fires when the spawning thread
        // exits: spawns run on the runtime's worker threads, which live as
        // long as seam does. A child whose parent is already gone exits at once.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let mut wrapped = CommandWrap::from(command);
        wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let mut handle = wrapped.spawn()?;
        let pid = handle.id().unwrap_or_default();
        let stdin = handle.stdin().take();
        let stdout = handle.stdout().take();
        let stderr = handle.stderr().take();
        Ok(Child { handle, pid, stdin, stdout, stderr })
    }
}

impl Child {
    /// Ends the child: SIGTERM to its process group, then SIGKILL after `grace`.
    /// Returns whether the end is proven (the leader was reaped) within `grace` after the kill.
    pub async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Ok(Some(status)) = self.handle.try_wait() {
            return Some(status);
        }
        let _ = self.handle.signal(15);
        if let Ok(Ok(status)) = tokio::time::timeout(grace, self.handle.wait()).await {
            return Some(status);
        }
        let _ = Box::into_pin(self.handle.kill()).await;
        tokio::time::timeout(grace, self.handle.wait()).await.ok().and_then(Result::ok)
    }

    /// Waits for the child to exit by itself.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.handle.wait().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spawn(command: &str, env: &[(&str, &str)]) -> Spawn {
        Spawn {
            command: command.into(),
            args: vec!["--flag".into()],
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        }
    }

    #[test]
    fn only_allowlisted_variables_pass_and_the_mount_env_wins() {
        let service = SubprocessService::new(Subprocess {
            env_passthrough: vec![EnvName("PATH".into()), EnvName("HOME".into())],
            runner: vec!["bwrap".into(), "--".into()],
        });
        let seam_env = |name: &str| match name {
            "PATH" => Some("/bin".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            "zz_token" => Some("x".to_owned()),
            _ => None,
        };
        let s = spawn("server", &[("HOME", "/override")]);
        let env = service.environment(&s, &[EnvName("zz_token".into()), EnvName("UNSET".into())], seam_env);
        assert_eq!(env, vec![("HOME".into(), "/override".into()), ("PATH".into(), "/bin".into()), ("zz_token".into(), "x".into())]);
        assert_eq!(service.environment(&s, &[], seam_env).iter().filter(|(k, _)| k == "zz_token").count(), 0);
        assert_eq!(service.argv(&s), ["bwrap", "--", "server", "--flag"]);
    }
}
