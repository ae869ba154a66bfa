//! The image (`Dockerfile`) and the Kubernetes example (`deploy/kubernetes/seam.yaml`),
//! as far as they can be checked where no container engine runs: the manifest is valid
//! Kubernetes (kubernetes-validate, offline, a pinned version), the Dockerfile copies
//! what exists and runs as no root, and the binary serves the way the image runs it: as
//! its unprivileged user, with node and the composition's server on PATH, reading the
//! composition and the tokens from the paths the manifest mounts them at, in a mount and
//! network namespace of its own (an overlay of this machine's root, so that nothing is
//! written outside the test's folder).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

/// The Kubernetes version the manifest is checked against: the oldest of those
/// kubernetes-validate 1.37 carries schemas for that clusters still run.
const KUBERNETES: &str = "1.33.0";

fn kubernetes_validate(manifest: &Path) -> std::process::Output {
    let validator = root().join(".cache/peers/venv/bin/kubernetes-validate");
    assert!(validator.exists(), "{} is missing: run scripts/install-peers", validator.display());
    Command::new(validator).args(["-k", KUBERNETES, "--strict", "--quiet"]).arg(manifest).output().unwrap()
}

/// The manifest's resources, read by PyYAML (kubernetes-validate's own reader).
fn manifest_resources() -> Vec<Value> {
    let read = "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))";
    let out = Command::new(python()).args(["-c", read]).arg(root().join("deploy/kubernetes/seam.yaml")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn resource<'a>(resources: &'a [Value], kind: &str) -> &'a Value {
    resources.iter().find(|r| r["kind"] == kind).unwrap_or_else(|| panic!("the manifest has no {kind}"))
}

/// The Dockerfile's instructions, continuation lines joined, comments left out: `(stage, instruction, arguments)`.
fn dockerfile() -> Vec<(usize, String, String)> {
    let text = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                if !current.trim().is_empty() {
                    joined.push(std::mem::take(&mut current));
                }
                current.clear();
            }
        }
    }
    let mut stage = 0;
    let mut out = Vec::new();
    for line in joined {
        let (instruction, arguments) = line.trim().split_once(char::is_whitespace).unwrap_or((&line, ""));
        if instruction.eq_ignore_ascii_case("FROM") {
            stage += 1;
        }
        out.push((stage, instruction.to_ascii_uppercase(), arguments.trim().to_owned()));
    }
    out
}

#[test]
fn the_manifest_is_valid_kubernetes_and_the_image_runs_as_it_says() {
    let manifest = root().join("deploy/kubernetes/seam.yaml");
    let checked = kubernetes_validate(&manifest);
    assert!(checked.status.success(), "{}{}", String::from_utf8_lossy(&checked.stdout), String::from_utf8_lossy(&checked.stderr));
    // The check can fail: a misspelt field is refused.
    let dir = scratch("image-manifest");
    let misspelt = dir.join("seam.yaml");
    std::fs::write(&misspelt, std::fs::read_to_string(&manifest).unwrap().replace("  replicas: ", "  replica: ")).unwrap();
    assert!(!kubernetes_validate(&misspelt).status.success(), "a misspelt field passed");

    let steps = dockerfile();
    let last = steps.iter().map(|(stage, ..)| *stage).max().unwrap();
    assert!(last >= 2, "multi-stage: {steps:?}");
    // Every path a COPY takes from the build context exists, and .dockerignore keeps none of them out.
    let ignored = std::fs::read_to_string(root().join(".dockerignore")).unwrap();
    let ignored: Vec<&str> = ignored.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    let mut copied = 0;
    for (_, instruction, arguments) in steps.iter().filter(|(_, i, a)| i == "COPY" && !a.starts_with("--from")) {
        let words: Vec<&str> = arguments.split_whitespace().collect();
        for source in &words[..words.len() - 1] {
            assert!(root().join(source).exists(), "{instruction} {arguments}: `{source}` does not exist");
            assert!(!ignored.iter().any(|i| source.trim_end_matches('/') == i.trim_end_matches('/')), "`{source}` is in .dockerignore");
            copied += 1;
        }
    }
    assert!(copied >= 5, "the workspace's manifests and crates are copied: {steps:?}");
    // The build stage builds the binary the run stage copies.
    assert!(steps.iter().any(|(s, i, a)| *s < last && i == "RUN" && a.contains("cargo build --release") && a.contains("--bin seam")));
    let copy_binary =
        steps.iter().find(|(s, i, a)| *s == last && i == "COPY" && a.starts_with("--from=")).expect("the run stage copies the binary");
    assert!(copy_binary.2.contains("/target/release/seam /usr/local/bin/seam"), "{copy_binary:?}");
    // The run stage: node, the user, the entry point.
    let from = steps.iter().rfind(|(_, i, _)| i == "FROM").unwrap();
    assert!(from.2.starts_with("node:"), "node for npm-launched servers: {from:?}");
    let user = steps.iter().rfind(|(s, i, _)| *s == last && i == "USER").expect("the run stage names a user");
    let uid = user.2.split(':').next().unwrap();
    assert!(uid != "root" && uid != "0" && uid.parse::<u32>().is_ok_and(|u| u > 0), "{user:?}");
    assert!(steps.iter().any(|(s, i, a)| *s == last && i == "ENTRYPOINT" && a == "[\"seam\"]"));
    // The server the shipped composition runs, at the version seam is tested with.
    let peers = std::fs::read_to_string(root().join("scripts/install-peers")).unwrap();
    let everything = peers.split_whitespace().find(|w| w.contains("server-everything@")).unwrap().trim_matches(['"', '(', ')']);
    assert!(steps.iter().any(|(s, i, a)| *s == last && i == "RUN" && a.contains(everything)), "the image installs {everything}");

    // The manifest runs the image as that user, never as root.
    let resources = manifest_resources();
    let pod = &resource(&resources, "Deployment")["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{pod}");
    assert_eq!(pod["securityContext"]["runAsUser"].to_string(), uid, "the manifest's user is the image's");
}

/// Mounted as the kubelet mounts a ConfigMap or a Secret: each file a link through
/// `..data`, itself a link to a timestamped folder, all readable by the container's user.
fn kubelet_folder(dir: &Path, files: &serde_json::Map<String, Value>) {
    let version = dir.join("..2026_12_07_12_00_00.1");
    std::fs::create_dir_all(&version).unwrap();
    for (name, content) in files {
        std::fs::write(version.join(name), content.as_str().unwrap()).unwrap();
        std::os::unix::fs::symlink(format!("..data/{name}"), dir.join(name)).unwrap();
    }
    std::os::unix::fs::symlink("..2026_12_07_12_00_00.1", dir.join("..data")).unwrap();
    let status = Command::new("chmod").args(["-R", "a+rX"]).arg(dir).status().unwrap();
    assert!(status.success());
}

#[test]
fn the_binary_serves_as_the_image_runs_it() {
    // SAFETY: geteuid only reads the process's effective user id.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "this test makes a mount and network namespace, as a container engine would: it runs as root (as CI does)");
    let resources = manifest_resources();
    let pod = &resource(&resources, "Deployment")["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let uid = pod["securityContext"]["runAsUser"].as_u64().expect("the manifest names the user");
    let mounted = |volume: &str| {
        let mounts = container["volumeMounts"].as_array().unwrap();
        mounts.iter().find(|m| m["name"] == volume).unwrap()["mountPath"].as_str().unwrap().to_owned()
    };
    let dir = scratch("image-run");
    let composition = dir.join("composition");
    kubelet_folder(&composition, resource(&resources, "ConfigMap")["data"].as_object().unwrap());
    let tokens = dir.join("tokens");
    let secret = resource(&resources, "Secret")["stringData"].as_object().unwrap().clone();
    kubelet_folder(&tokens, &secret);
    let args: Vec<String> = container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    let listen = args.iter().skip_while(|a| *a != "--listen").nth(1).expect("the manifest says where seam listens").clone();
    let port = listen.rsplit(':').next().unwrap().to_owned();
    let probe = container["readinessProbe"]["exec"]["command"].as_array().unwrap();
    let probe: Vec<String> = probe.iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let image_path = format!("{}:/usr/local/bin:/usr/bin:/bin", root().join(".cache/peers/node_modules/.bin").display());
    let node = Command::new("sh").args(["-c", "command -v node"]).output().unwrap();
    let node_dir = Path::new(String::from_utf8_lossy(&node.stdout).trim()).parent().unwrap().display().to_string();
    let client = root().join("tests/peers/sdk-client.mjs");
    let ops = [
        json!({ "op": "list" }),
        json!({ "op": "call", "name": "mcp__everything__echo", "args": { "message": "from the pod" } }),
        json!({ "op": "close" }),
    ];
    let ops: String = ops.iter().map(|o| format!("{o}\n")).collect();
    // The container: this machine's root as an overlay (writes land in a tmpfs), the
    // repository and the binary bound at their own paths, the ConfigMap and the Secret at
    // the manifest's mount paths, the image's folders made as its Dockerfile makes them.
    let script = format!(
        r#"set -eu
ip link set lo up
mount -t tmpfs container /mnt
mkdir -p /mnt/upper /mnt/work /mnt/root
mount -t overlay overlay -o lowerdir=/,upperdir=/mnt/upper,workdir=/mnt/work /mnt/root
for d in proc dev sys; do mount --rbind /$d /mnt/root/$d; done
for d in {repo} {bin_dir}; do mkdir -p /mnt/root$d; mount --rbind $d /mnt/root$d; done
mkdir -p /mnt/root{composition_at} /mnt/root{tokens_at} /mnt/root/etc/seam/skills /mnt/root/workspace /mnt/root/home/seam
mount --bind -o ro {composition} /mnt/root{composition_at}
mount --bind -o ro {tokens} /mnt/root{tokens_at}
chown {uid}:{uid} /mnt/root/workspace /mnt/root/home/seam
run() {{ chroot /mnt/root setpriv --reuid={uid} --regid={uid} --clear-groups env -i PATH={path}:{node_dir} HOME=/home/seam "$@"; }}
# Not through `run`: a function in the background is a shell of its own, and `$!` its pid.
chroot /mnt/root setpriv --reuid={uid} --regid={uid} --clear-groups env -i PATH={path}:{node_dir} HOME=/home/seam {seam} {args} >/dev/null 2>/mnt/seam.log &
seam=$!
trap 'kill -KILL $seam 2>/dev/null || true' EXIT
tries=0
until run sh -c {probe} >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ $tries -gt 600 ] || ! kill -0 $seam 2>/dev/null; then echo "NOT READY"; cat /mnt/seam.log; exit 1; fi
  sleep 0.1
done
echo "READY"
echo "UID $(awk '/^Uid:/ {{print $2}}' /proc/$seam/status)"
echo "HEALTHZ $(curl -fsS http://127.0.0.1:{port}/healthz)"
echo "UNGUARDED $(curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/status)"
# A client in the cluster names the Service.
echo "SERVICE $(curl -s -o /dev/null -w '%{{http_code}}' --resolve seam:{port}:127.0.0.1 -H "Authorization: Bearer "{token} \
  -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-11-25' \
  --data {initialize} http://seam:{port}/mcp)"
printf '%s' {ops} | SEAM_TOKEN={token} node {client} http http://127.0.0.1:{port}/mcp
kill -TERM $seam
wait $seam && echo "STOPPED 0" || echo "STOPPED $?"
"#,
        repo = quote(&root().display().to_string()),
        bin_dir = quote(&Path::new(seam_bin()).parent().unwrap().display().to_string()),
        node_dir = quote(&node_dir),
        composition_at = mounted("composition"),
        tokens_at = mounted("tokens"),
        composition = quote(&composition.display().to_string()),
        tokens = quote(&tokens.display().to_string()),
        path = quote(&image_path),
        seam = quote(seam_bin()),
        args = args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "),
        probe = quote(&probe[2..].join(" ")),
        ops = quote(&ops),
        token = quote(secret["default"].as_str().unwrap()),
        client = quote(&client.display().to_string()),
        initialize = quote(
            &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "in-cluster", "version": "1" } } })
            .to_string()
        ),
    );
    assert_eq!(&probe[..2], ["sh", "-c"], "the probe is a shell command");
    let out = Command::new("unshare").args(["--mount", "--net", "--propagation", "private", "sh", "-c", &script]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let said = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    let line = |tag: &str| stdout.lines().find_map(|l| l.strip_prefix(tag)).unwrap_or_else(|| panic!("no {tag}: {said}")).trim().to_owned();
    assert_eq!(line("UID "), uid.to_string(), "seam runs as the image's user");
    assert_eq!(line("HEALTHZ "), "ok", "the liveness probe's route");
    assert_eq!(line("UNGUARDED "), "401", "past loopback /status needs the token");
    assert_eq!(line("SERVICE "), "200", "the Service's name is one `serve.allowed_hosts` lists");
    let answers: Vec<Value> = stdout.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    let tools = answers.iter().find(|a| a["tools"].is_array()).unwrap_or_else(|| panic!("{said}"));
    assert!(tools["tools"].as_array().unwrap().iter().any(|t| t["name"] == "mcp__everything__echo"), "{tools}");
    let called = answers.iter().find(|a| a["result"].is_object()).unwrap_or_else(|| panic!("{said}"));
    assert_eq!(called["result"]["content"][0]["text"], "Echo: from the pod", "{called}");
    assert_eq!(line("STOPPED "), "0", "SIGTERM stops it cleanly");
}
