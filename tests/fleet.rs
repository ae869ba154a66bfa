//! Running beyond one process: the Kubernetes example's composition is valid,
//! and two `seam serve` processes watching one mounted ConfigMap folder
//! converge to the same composition digest after the kubelet's `..data` swap.

use std::path::Path;
use std::process::Command;

use crate::support::*;

/// The composition inside the example's ConfigMap (`data.seam.yaml: |`).
fn configmap_composition(manifest: &str) -> String {
    let mut lines = manifest.lines().skip_while(|l| l.trim() != "seam.yaml: |").skip(1);
    let first = lines.next().expect("the ConfigMap holds seam.yaml");
    let indent = first.len() - first.trim_start().len();
    std::iter::once(first)
        .chain(lines.take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent))
        .map(|l| l.get(indent..).unwrap_or("").to_owned() + "\n")
        .collect()
}

#[test]
fn the_kubernetes_example_composition_is_valid() {
    let manifest = std::fs::read_to_string(root().join("deploy/kubernetes/seam.yaml")).unwrap();
    let composition = configmap_composition(&manifest);
    assert!(composition.starts_with("seam: 1\n"), "{composition}");
    let dir = scratch("fleet-example");
    let file = dir.join("seam.yaml");
    std::fs::write(&file, &composition).unwrap();
    let out = Command::new(seam_bin()).args(["validate", &file.display().to_string()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// The kubelet's layout: `seam.yaml -> ..data/seam.yaml`, `..data -> ..<version>`.
fn write_version(dir: &Path, version: &str, tools: &str) {
    std::fs::create_dir_all(dir.join(version)).unwrap();
    std::fs::write(dir.join(version).join("seam.yaml"), format!("seam: 1\nmounts:\n{}", flaky_mount("a", &[("FLAKY_TOOLS", tools)], "")))
        .unwrap();
}

#[test]
fn two_replicas_on_one_configmap_converge_to_one_digest() {
    let dir = scratch("fleet");
    write_version(&dir, "..2026_12_03_09_00_00.1", "first");
    std::os::unix::fs::symlink("..2026_12_03_09_00_00.1", dir.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/seam.yaml", dir.join("seam.yaml")).unwrap();
    let file = dir.join("seam.yaml");
    let one = HttpSeam::start(&file, &["--debounce", "50ms"]);
    let two = HttpSeam::start(&file, &["--debounce", "50ms"]);
    let digest = |s: &HttpSeam| s.status()["digest"].as_str().unwrap().to_owned();
    let before = digest(&one);
    assert_eq!(digest(&two), before, "the same file, the same digest");

    // The ConfigMap is updated: a new folder, `..data` renamed over, the old folder removed.
    write_version(&dir, "..2026_12_03_09_05_00.2", "second");
    std::os::unix::fs::symlink("..2026_12_03_09_05_00.2", dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    std::fs::remove_dir_all(dir.join("..2026_12_03_09_00_00.1")).unwrap();
    // The live digest is the fact: a swap may also bring an `unchanged` reload after the applied one.
    let moved = |s: &serde_json::Value| s["digest"] != before.as_str();
    let after = one.wait_status("replica one on the new version", moved)["digest"].clone();
    assert_eq!(two.wait_status("replica two on the new version", moved)["digest"], after, "both replicas run the new composition");
    for seam in [&one, &two] {
        let mounts = seam.status()["mounts"].clone();
        assert_eq!(mounts["a"]["state"], "ready", "{mounts}");
    }
}
