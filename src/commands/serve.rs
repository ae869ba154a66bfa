//! `seam serve FILE`: run the composition and serve an agent's catalog over MCP
//! (stdio, or HTTP: `crate::http`), hot reloading on file changes and SIGHUP;
//! SIGINT/SIGTERM drain and dispose every mount, so no child outlives seam.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use seam_engine::Engine;
use seam_engine::deploy::{Deployment, Generation};
use seam_engine::outcome::OutcomeKind;
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;
use crate::{Exit, Transport};

pub struct Args {
    pub file: PathBuf,
    pub agent: String,
    pub transport: Transport,
    pub listen: SocketAddr,
    pub watch: bool,
    pub debounce: Duration,
    pub drain_timeout: Duration,
    /// Serve past loopback with agents no token guards.
    pub insecure_no_auth: bool,
    /// Measure for `/metrics` (HTTP only).
    pub metrics: bool,
}

/// How a started composition is served, which decides what a reload must hold to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// stdio, `seam call`, `inventory --probe`: no tokens apply.
    Local,
    /// HTTP on loopback: tokens named must be readable.
    Loopback,
    /// HTTP beyond loopback: and every agent must have one.
    Network,
}

/// Starts the composition, with `hooks` outermost in its call stage; `Err(exit)` when it
/// was rejected (its diagnostics are printed).
pub async fn start(
    engine: Engine,
    file: &Path,
    drain_timeout: Duration,
    reach: Reach,
    hooks: Vec<Arc<dyn seam_engine::chain::Hook>>,
) -> Result<Arc<Deployment>, Exit> {
    use std::io::IsTerminal as _;
    // On a terminal, start-up shows live progress; elsewhere the per-mount lines after it are enough.
    let progress = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(indicatif::ProgressStyle::with_template("{spinner} starting mounts {pos}/{len} {msg}").expect("a valid template"));
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    });
    let on_activated = progress.clone().map(|bar| {
        Arc::new(move |a: seam_engine::deploy::Activated<'_>| {
            bar.set_length(a.total as u64);
            bar.set_position(a.done as u64);
            bar.set_message(format!("({} {:?})", a.id, a.state).to_lowercase());
        }) as seam_engine::deploy::OnActivated
    });
    let options = seam_engine::deploy::Options {
        drain_timeout,
        on_activated,
        check_serve_token: reach != Reach::Local,
        require_tokens: reach == Reach::Network,
        audit: true,
        hooks,
        ..Default::default()
    };
    let deployment = Deployment::new(Arc::new(engine), file, Arc::new(seam_engine::env::ProcessEnv), options);
    let outcome = deployment.reload().await;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    if outcome.outcome == OutcomeKind::Rejected {
        let report = outcome.human();
        if !report.is_empty() {
            say!("{}", report.trim_end());
        }
        say!("seam: {} was not started", file.display());
        deployment.shutdown().await;
        return Err(Exit::Invalid);
    }
    Ok(deployment)
}

/// One line per mount: its state, tool count and detail.
pub fn print_mounts(g: &Generation) {
    for (id, slot) in &g.mounts {
        let status = slot.running.status();
        let state = serde_json::to_value(status.state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let detail = status.detail.map(|d| format!(" ({d})")).unwrap_or_default();
        say!("seam: mount {id} [{}]: {state}, {} tools{detail}", slot.kind, slot.running.tools().len());
    }
}

pub fn run(engine: Engine, args: Args) -> Result<Exit, crate::error::Error> {
    raise_descriptor_limit();
    let runtime = match args.transport {
        Transport::Stdio => super::single_client_runtime()?,
        Transport::Http => super::http_runtime()?,
    };
    let served = runtime.block_on(serve(engine, args));
    drop(runtime);
    served
}

/// Raises the soft limit on open descriptors to the hard one, as servers do: the
/// soft limit is often 1024, the default `serve.max_connections`, and a server
/// that runs out of descriptors before its own cap cannot even answer `/healthz`.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                tracing::warn!("cannot raise the open-file limit from {}: {}", limit.rlim_cur, std::io::Error::last_os_error());
            }
        }
    }
}

async fn serve(engine: Engine, args: Args) -> Result<Exit, crate::error::Error> {
    // Installed first: a signal during start-up waits for it to finish (so its children are stopped,
    // not orphaned), and a SIGHUP sent as soon as seam says it serves reloads instead of killing it.
    let signals = Signals::install().map_err(crate::error::Error::Signals)?;
    let reach = match args.transport {
        Transport::Stdio => Reach::Local,
        Transport::Http if args.listen.ip().is_loopback() => Reach::Loopback,
        Transport::Http if args.insecure_no_auth => {
            say!(
                "seam: warning: --insecure-no-auth: listening on {} with agents no token guards; anyone who can reach it can call their tools",
                args.listen
            );
            Reach::Loopback
        }
        Transport::Http => Reach::Network,
    };
    // Over HTTP, the status page shows the call stage's traffic, and `/metrics` measures what
    // reaches the mounts, each read from the call stage by a hook.
    let http = args.transport == Transport::Http;
    let traffic = Arc::new(crate::traffic::Traffic::default());
    let mount_durations = (http && args.metrics).then(|| Arc::new(crate::metrics::MountDurations::default()));
    let mut hooks: Vec<Arc<dyn seam_engine::chain::Hook>> = Vec::new();
    if http {
        hooks.push(traffic.clone());
    }
    hooks.extend(mount_durations.iter().map(|hook| hook.clone() as Arc<dyn seam_engine::chain::Hook>));
    let deployment = match start(engine, &args.file, args.drain_timeout, reach, hooks).await {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let live = deployment.live().expect("a started deployment has a generation");
    if !live.resolved.agents.contains_key(&args.agent) {
        deployment.shutdown().await;
        return Err(crate::error::Error::UnknownAgent { agent: args.agent.clone(), file: args.file.clone() });
    }
    print_mounts(&live);
    drop(live);

    let stop = CancellationToken::new();
    tokio::spawn(signals.run(deployment.clone(), stop.clone()));
    tokio::spawn(deployment.clone().reload_worker(stop.clone()));
    if args.watch {
        let (d, s, debounce) = (deployment.clone(), stop.clone(), args.debounce);
        tokio::spawn(async move {
            if let Err(e) = crate::watch::run(d, debounce, s).await {
                tracing::error!("{e}");
            }
        });
    }
    let served = match args.transport {
        Transport::Stdio => serve_stdio(deployment.clone(), args.agent.clone(), stop.clone()).await,
        Transport::Http => crate::http::serve(deployment.clone(), args.listen, stop.clone(), traffic, mount_durations.as_deref()).await,
    };
    stop.cancel();
    deployment.shutdown().await;
    served.map(|()| Exit::Valid)
}

struct Signals {
    hup: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals { hup: signal(SignalKind::hangup())?, int: signal(SignalKind::interrupt())?, term: signal(SignalKind::terminate())? })
    }

    async fn run(mut self, deployment: Arc<Deployment>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = self.hup.recv() => { tracing::info!("SIGHUP: reloading"); deployment.request_reload() }
                _ = self.int.recv() => break,
                _ = self.term.recv() => break,
            }
        }
        tracing::info!("stopping: draining calls and disposing mounts");
        stop.cancel();
    }
}

async fn serve_stdio(deployment: Arc<Deployment>, agent: String, stop: CancellationToken) -> Result<(), crate::error::Error> {
    use seam_wire::stdio::{LineTransport, LineWriter};
    say!("seam: serving agent `{agent}` over stdio");
    let gateway = Gateway::new(deployment, agent, Arc::default());
    let (read, writer): (Box<dyn tokio::io::AsyncRead + Send + Unpin>, LineWriter) = match socket_stdio() {
        Some((stdin, stdout)) => (Box::new(stdin), LineWriter::new(stdout)),
        None => {
            let (stdin, stdout) = rmcp::transport::stdio_pipes();
            (Box::new(stdin), LineWriter::new(stdout))
        }
    };
    let transport =
        LineTransport::<rmcp::RoleServer>::new(read, writer).with_backlog(crate::gateway::stdio_backlog(), crate::gateway::capped);
    let calls = gateway.clone();
    let service = gateway.serve(transport).await.map_err(|e| crate::error::Error::Handshake(Box::new(e)))?;
    let cancel = service.cancellation_token();
    let mut served = std::pin::pin!(service.waiting());
    tokio::select! {
        _ = &mut served => return Ok(()),
        _ = stop.cancelled() => {}
    }
    // The calls running finish first (within the grace an HTTP stop gives its connections), and
    // none starts after them; rmcp, stopped, then sends the answers its handlers gave.
    let _no_more = tokio::time::timeout(crate::listen::SHUTDOWN_GRACE, calls.calls_finished()).await;
    cancel.cancel();
    let _ = served.await;
    Ok(())
}

/// stdin and stdout when they are sockets: Node's `child_process` (so the
/// official SDK's stdio transport) hands a child the ends of socket pairs, not
/// pipes. Tokio's own stdin/stdout run every read and write on the blocking
/// thread pool, a thread hand-off per message; rmcp's `stdio_pipes` avoids that
/// for FIFOs only. stdin is registered for reading alone, and stdout is written
/// without a standing registration (`OnDemandWrite`): each is one wake-up less
/// per call than a socket registered both ways.
fn socket_stdio() -> Option<(tokio::net::unix::pipe::Receiver, seam_wire::stdio::OnDemandWrite)> {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::FileTypeExt as _;
    let open = |fd: std::os::fd::BorrowedFd<'_>| -> Option<std::os::fd::OwnedFd> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = std::fs::File::from(owned);
        if !file.metadata().ok()?.file_type().is_socket() {
            return None;
        }
        let stream = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
        stream.set_nonblocking(true).ok()?;
        Some(stream.into())
    };
    let (stdin, stdout) = (open(std::io::stdin().as_fd())?, open(std::io::stdout().as_fd())?);
    let stdin = tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(stdin).ok()?;
    Some((stdin, seam_wire::stdio::OnDemandWrite::new(stdout)))
}
