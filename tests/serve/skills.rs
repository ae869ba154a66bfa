//! seam's own skills over MCP's skills extension (SEP-2640): the MCP
//! Inspector's `--verify` reads every file of every skill an agent is served
//! and checks sizes, digests and frontmatter, over stdio and HTTP, in both
//! protocol eras; and what a skill's folder serves (no hidden file, no link,
//! the extension's limits).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use super::inspector::{run_inspector, seam_targets};
use crate::support::*;

/// Writes skill `name` under `skills` with extra frontmatter lines.
fn skill(skills: &Path, name: &str, extra: &str) -> std::path::PathBuf {
    let dir = skills.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: The {name} skill.\n{extra}---\nDo {name}.\n")).unwrap();
    dir
}

fn composition(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("c.yaml");
    // `bare` is served no skills: it has not the `skill` tool.
    let text = "seam: 1\nmounts:\n  skills:\n    kind: skills.fs\n    bundled_dir: ./skills\ntools:\n  skill: true\nagents:\n  bare:\n    tools: { skill: false }\n";
    std::fs::write(&file, text).unwrap();
    file
}

/// The `uri`s of a list's items.
fn uris(items: &Value) -> Vec<&str> {
    items.as_array().unwrap().iter().map(|item| item["uri"].as_str().unwrap()).collect()
}

#[test]
fn the_inspector_verifies_every_skill_seam_serves_over_the_extension() {
    let dir = scratch("skills-extension");
    let skills = dir.join("skills");
    let pdf = skill(&skills, "pdf", "license: MIT\nmetadata:\n  version: \"1.2\"\n");
    std::fs::create_dir_all(pdf.join("scripts")).unwrap();
    std::fs::create_dir_all(pdf.join("assets")).unwrap();
    std::fs::write(pdf.join("scripts/fill.py"), "print('fill')\n").unwrap();
    std::fs::write(pdf.join("assets/logo.png"), [0x89, b'P', b'N', b'G', 0, 1, 0xff]).unwrap();
    // Not served: a hidden file, and a link (here to a file outside the folder).
    std::fs::write(pdf.join(".notes"), "private\n").unwrap();
    std::fs::write(dir.join("outside.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(dir.join("outside.txt"), pdf.join("outside.txt")).unwrap();
    // A name a URI must encode.
    std::fs::write(pdf.join("read me.txt"), "50% done\n").unwrap();
    skill(&skills, "notes", "disable-model-invocation: true\n");
    // Loadable by no path of seam's: not served either.
    skill(&skills, "sealed", "disable-model-invocation: true\nuser-invocable: false\n");
    let file = composition(&dir);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let url = format!("{}/mcp", seam.base);
    for (transport, target) in seam_targets(&file, &seam) {
        let target: Vec<&str> = target.iter().map(String::as_str).collect();
        let target = &target[..];
        for era in ["legacy", "modern"] {
            let at = format!("{transport}, {era} era");
            let (code, out, err) = run_inspector(&dir, target, era, &["--method", "skills/list", "--verify"]);
            assert_eq!(code, 0, "{at}: every skill verifies: {out}{err}");
            let verified: BTreeSet<String> = out
                .lines()
                .map(|line| serde_json::from_str::<Value>(line).unwrap())
                .inspect(|skill| assert_eq!(skill["outcome"], "verified", "{at}: {skill}"))
                .map(|skill| skill["name"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(verified, BTreeSet::from(["notes".to_owned(), "pdf".to_owned()]), "{at}");
        }
    }
    let run = |args: &[&str]| {
        let (code, out, err) = run_inspector(&dir, &[url.as_str()], "legacy", args);
        (code, serde_json::from_str::<Value>(if out.is_empty() { &err } else { &out }).unwrap())
    };
    let (code, listed) = run(&["--method", "skills/list"]);
    assert_eq!(code, 0, "{listed}");
    assert!(listed["result"].get("ttlMs").is_none(), "no cache hints before 2026-07-28: {listed}");
    // A 2026-07-28 client is told the list may change at once and is its session's alone:
    // it follows the agent's skills and the files on disk. (The Inspector prints no hints.)
    let modern = modern_request(&url, "", "skills/list", json!({}), json!({}));
    assert_eq!((&modern["result"]["ttlMs"], &modern["result"]["cacheScope"]), (&json!(0), &json!("private")), "{modern}");
    let skills = &listed["result"]["skills"];
    assert_eq!(uris(skills), ["skill://notes/SKILL.md", "skill://pdf/SKILL.md"]);
    let pdf = &skills[1];
    assert_eq!(
        uris(&pdf["resources"]),
        ["skill://pdf/SKILL.md", "skill://pdf/assets/logo.png", "skill://pdf/read%20me.txt", "skill://pdf/scripts/fill.py"]
    );
    assert_eq!(
        pdf["frontmatter"],
        json!({ "name": "pdf", "description": "The pdf skill.", "license": "MIT", "metadata": { "version": "1.2" } })
    );
    // The permissions travel in the frontmatter, for the host to honour.
    assert_eq!(skills[0]["frontmatter"]["disable-model-invocation"], true);
    let (code, got) = run(&["--method", "skills/get", "--uri", "skill://pdf/SKILL.md"]);
    assert_eq!((code, &got["result"]["skill"]), (0, pdf), "{got}");
    // A skill's folders, one level at a time (`directoryRead`): what the manifest serves, folders as `inode/directory`.
    let (code, root) = run(&["--method", "resources/directory/read", "--uri", "skill://pdf"]);
    assert_eq!(code, 0, "{root}");
    let children: Vec<(&str, &str)> = root["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["uri"].as_str().unwrap(), r["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(
        children,
        [
            ("skill://pdf/SKILL.md", "text/markdown"),
            ("skill://pdf/read%20me.txt", "text/plain"),
            ("skill://pdf/assets", "inode/directory"),
            ("skill://pdf/scripts", "inode/directory")
        ]
    );
    let (code, scripts) = run(&["--method", "resources/directory/read", "--uri", "skill://pdf/scripts"]);
    assert_eq!((code, uris(&scripts["result"]["resources"])), (0, vec!["skill://pdf/scripts/fill.py"]), "{scripts}");
    for (method, uri) in [
        ("skills/get", "skill://nope/SKILL.md"),
        ("resources/read", "skill://pdf/outside.txt"),
        ("resources/read", "skill://pdf/.notes"),
        ("resources/directory/read", "skill://pdf/nope"),
    ] {
        let (code, refused) = run(&["--method", method, "--uri", uri]);
        assert_ne!(code, 0, "{method} {uri} is refused: {refused}");
    }
    // A skill's file that nothing serves is the skills extension's invalid params; another URI nothing
    // serves is a resource not found, which carries its URI (and which 2026-07-28 sends as -32602 too).
    let read = |uri: &str| modern_request(&url, "", "resources/read", json!({ "uri": uri }), json!({}))["error"].clone();
    let (skill, other) = (read("skill://nope/SKILL.md"), read("nothing://x"));
    assert_eq!((&skill["code"], &skill["data"]), (&json!(-32602), &Value::Null), "{skill}");
    assert_eq!((&other["code"], &other["data"]), (&json!(-32602), &json!({ "uri": "nothing://x" })), "{other}");
    // To an agent served no skills (it does not declare the extension), a `skill://` URI is a resource like another.
    let bare = modern_request(&seam.base, "/agents/bare/mcp", "resources/read", json!({ "uri": "skill://nope/SKILL.md" }), json!({}));
    assert_eq!(bare["error"]["data"], json!({ "uri": "skill://nope/SKILL.md" }), "{bare}");
    assert!(seam.terminate().success());
}

/// A skill of more than 512 files or 16 MiB is not served over the extension (at
/// each limit it is); the `skill` tool's catalog keeps it.
#[test]
fn a_skill_past_the_extension_s_limits_is_not_served_over_it() {
    let dir = scratch("skills-extension-limits");
    let skills = dir.join("skills");
    for (name, files) in [("files-at-limit", 511), ("files-past-limit", 512)] {
        let at = skill(&skills, name, "");
        for n in 0..files {
            std::fs::write(at.join(format!("f{n}.txt")), "x").unwrap();
        }
    }
    for (name, extra) in [("bytes-at-limit", 0), ("bytes-past-limit", 1)] {
        let at = skill(&skills, name, "");
        let skill_md = std::fs::metadata(at.join("SKILL.md")).unwrap().len();
        std::fs::write(at.join("big.bin"), vec![0u8; (16 * 1024 * 1024 - skill_md + extra) as usize]).unwrap();
    }
    let file = composition(&dir);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let listed = client.send(json!({ "op": "request", "method": "skills/list" }));
    let served: Vec<&str> = uris(&listed["result"]["skills"]);
    assert_eq!(
        served,
        ["skill://bytes-at-limit/SKILL.md", "skill://files-at-limit/SKILL.md"],
        "{}",
        listed["result"]["skills"].as_array().unwrap().len()
    );
    let catalog = client.tool("skill")["description"].as_str().unwrap().to_owned();
    assert!(catalog.contains("- files-past-limit:") && catalog.contains("- bytes-past-limit:"), "{catalog}");
    client.close();
    assert!(seam.terminate().success());
}

/// An edit to one file of a skill changes that file's digest and nothing else,
/// and a session that listed the skills is told its resources changed.
#[test]
fn an_edit_to_a_skill_s_file_moves_its_digest_and_is_announced() {
    let dir = scratch("skills-extension-edit");
    let skills = dir.join("skills");
    let pdf = skill(&skills, "pdf", "");
    std::fs::create_dir_all(pdf.join("scripts")).unwrap();
    std::fs::write(pdf.join("scripts/fill.py"), "print('fill')\n").unwrap();
    skill(&skills, "notes", "");
    let file = composition(&dir);
    let seam = HttpSeam::start(&file, &[]);
    let mut client = SdkClient::http(&format!("{}/mcp", seam.base));
    let list = |client: &mut SdkClient| client.send(json!({ "op": "request", "method": "skills/list" }))["result"]["skills"].clone();
    let before = list(&mut client);
    std::fs::write(pdf.join("scripts/fill.py"), "print('filled')\n").unwrap();
    client.wait_resource_list_changed();
    let after = list(&mut client);
    assert_eq!(after[0], before[0], "the other skill is untouched");
    let (was, now) = (&before[1]["resources"], &after[1]["resources"]);
    assert_eq!(now[0], was[0], "SKILL.md is untouched");
    assert_eq!(now[1]["uri"], "skill://pdf/scripts/fill.py");
    assert_ne!(now[1]["digest"], was[1]["digest"], "the edited file's digest moved");
    assert_eq!(now[1]["size"], 16);
    client.close();
    assert!(seam.terminate().success());
}

/// Reads of skills' files take their bytes from one budget, every client's together,
/// and give them back once their answers have been sent; past it a read waits its turn,
/// it is not refused. Two reads of a 15 MiB file whose clients do not read their answers
/// hold 30 MiB of the 32 MiB; a third waits (`/status` `reads.waiting`) until one of the
/// two answers has been read, and then is answered whole. (Before, every concurrent read
/// of such a file held about 41 MiB at once, however many there were.)
#[test]
fn reads_of_large_files_wait_their_turn_past_the_read_budget() {
    use std::io::{Read as _, Write as _};
    let dir = scratch("skills-read-budget");
    let skills = dir.join("skills");
    let big = skill(&skills, "big", "");
    // Not UTF-8: served as a base64 blob, larger than the file, as a read answers it.
    let size = 15 << 20;
    let data: Vec<u8> = (0..size).map(|i: usize| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80).collect();
    std::fs::write(big.join("data.bin"), &data).unwrap();
    let file = composition(&dir);
    let seam = HttpSeam::start(&file, &["--no-watch"]);
    let uri = "skill://big/data.bin";
    let addr = seam.base.trim_start_matches("http://").to_owned();
    // A 2026-07-28 client's read, sent; its answer left unread.
    let send = || {
        let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": { "uri": uri, "_meta": meta } }).to_string();
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: resources/read\r\nMcp-Name: {uri}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream
    };
    let reads = || seam.status()["reads"].clone();
    let answer = |mut stream: std::net::TcpStream| {
        let mut read = Vec::new();
        stream.read_to_end(&mut read).unwrap();
        let text = String::from_utf8(read).unwrap();
        let body = &text[text.find("\r\n\r\n").expect("a head") + 4..];
        let answer: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {}", &body[..body.len().min(300)]));
        use base64::Engine as _;
        let blob = answer["result"]["contents"][0]["blob"].as_str().unwrap_or_else(|| panic!("{answer:.300}"));
        assert!(base64::engine::general_purpose::STANDARD.decode(blob).unwrap() == data, "the file, whole");
    };
    let (first, second) = (send(), send());
    wait_until("two reads to hold their bytes", || reads()["bytes_in_flight"] == 2 * size);
    let third = send();
    wait_until("the third read to wait", || reads()["waiting"] == 1);
    // Waiting, it is first in line for what frees up (the budget's queue is fair): never past the budget.
    assert_eq!(reads()["bytes_in_flight"], 32 << 20, "{}", reads());
    answer(first);
    answer(third);
    answer(second);
    wait_until("every read's bytes given back", || reads() == json!({ "bytes_in_flight": 0, "waiting": 0 }));
    assert!(seam.terminate().success());
}

/// A 2026-07-28 client's `subscriptions/listen` stream is told when a skill's files
/// change (`resources/list_changed`), as a session that listed skills is: both follow
/// one rule (`Gateway::what_changed`). A reload that adds a mount is announced first,
/// which shows the stream is following before the skill is edited.
#[test]
fn a_listen_stream_is_told_when_a_skill_s_files_change() {
    let dir = scratch("skills-extension-listen");
    let skills = dir.join("skills");
    let pdf = skill(&skills, "pdf", "");
    let file = composition(&dir);
    let seam = HttpSeam::start(&file, &[]);
    let (mut reloaded, mut edited) = (false, false);
    let seen = super::eras::listen(&seam.base, json!({ "toolsListChanged": true, "resourcesListChanged": true }), |seen| {
        if seen.contains("notifications/subscriptions/acknowledged") && !reloaded {
            reloaded = true;
            let text = std::fs::read_to_string(&file).unwrap().replace("mounts:\n", &format!("mounts:\n{}", flaky_mount("a", &[], "")));
            write_atomically(&file, &text);
        }
        if seen.contains("notifications/tools/list_changed") && !edited {
            edited = true;
            std::fs::write(pdf.join("notes.txt"), "a new file\n").unwrap();
        }
        seen.contains("notifications/resources/list_changed")
    });
    assert!(seen.contains("notifications/tools/list_changed"), "{seen}");
    assert!(seen.contains("notifications/resources/list_changed"), "a skill's new file is announced: {seen}");
    assert!(seam.terminate().success());
}
