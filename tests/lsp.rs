//! The `lsp` tool end to end against real language servers
//! (typescript-language-server with TypeScript, pyright), through `seam call`
//! — one cold process per question, so every answer here is a cold first query.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::*;

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A small TypeScript project: an interface and its implementation, a function used across files, a `.d.ts`.
fn ts_project(dir: &Path) {
    write(
        dir,
        &[
            ("tsconfig.json", r#"{ "compilerOptions": { "strict": true, "target": "es2022", "module": "nodenext" }, "include": ["src"] }"#),
            (
                "src/greet.ts",
                "export interface Greeter {\n  greet(name: string): string;\n}\n\nexport function shout(text: string): string {\n  return text.toUpperCase();\n}\n",
            ),
            (
                "src/english.ts",
                "import { Greeter, shout } from \"./greet.js\";\n\nexport class English implements Greeter {\n  greet(name: string): string {\n    return shout(`hello ${name}`);\n  }\n}\n",
            ),
            (
                "src/main.ts",
                "import { shout } from \"./greet.js\";\nimport { English } from \"./english.js\";\n\nconst g: import(\"./greet.js\").Greeter = new English();\nconsole.log(shout(g.greet(\"😀 日本\")), VERSION);\n",
            ),
            ("src/globals.d.ts", "declare const VERSION: string;\n"),
        ],
    );
}

fn composition(dir: &Path, mounts: &str) -> std::path::PathBuf {
    let file = dir.join("seam.yaml");
    std::fs::write(&file, format!("seam: 1\nservices:\n  workspace: {{ root: . }}\nmounts:\n{mounts}tools:\n  lsp: true\n")).unwrap();
    file
}

fn typescript_mount() -> String {
    format!(
        "  typescript:\n    kind: lsp.stdio\n    command: {}\n    args: [--stdio]\n    extensions: {{ .ts: typescript }}\n    initialization_options: {{ tsserver: {{ useSyntaxServer: never }} }}\n",
        json!(peer_bin("typescript-language-server"))
    )
}

fn lsp(file: &Path, operation: &str, path: &str, line: u32, character: u32) -> Value {
    let args = json!({ "operation": operation, "file_path": path, "line": line, "character": character });
    let out = Command::new(seam_bin()).args(["call", &file.display().to_string(), "lsp", "--args", &args.to_string()]).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("no result; stderr:\n{}", String::from_utf8_lossy(&out.stderr)))
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}"))
}

#[test]
fn typescript_answers_definition_references_implementation_and_hover_cold() {
    let dir = scratch("lsp-ts");
    ts_project(&dir);
    let file = composition(&dir, &typescript_mount());

    // `shout` used in main.ts (line 5, column 13) is defined in greet.ts, not at the import.
    let def = lsp(&file, "goToDefinition", "src/main.ts", 5, 13);
    assert_eq!(text(&def), "src/greet.ts:5:17  export function shout(text: string): string {", "{def}");

    let refs = lsp(&file, "findReferences", "src/greet.ts", 5, 17);
    let lines: Vec<&str> = text(&refs).lines().collect();
    assert!(lines.contains(&"src/greet.ts:5:17  export function shout(text: string): string {"), "declaration included: {lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("src/english.ts:5:12")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("src/main.ts:5:13")), "{lines:?}");

    // The interface method's implementation.
    let imp = lsp(&file, "goToImplementation", "src/greet.ts", 2, 3);
    assert!(text(&imp).starts_with("src/english.ts:4:3  greet(name: string): string {"), "{imp}");

    // Hover on `g.greet` after the emoji and CJK on the same line is the method's type: columns count UTF-16 units.
    let hover = lsp(&file, "hover", "src/main.ts", 5, 23);
    assert!(text(&hover).contains("greet(name: string): string"), "{hover}");

    // A `.d.ts` file is routed as `.ts`.
    let dts = lsp(&file, "hover", "src/globals.d.ts", 1, 15);
    assert!(text(&dts).contains("VERSION: string"), "{dts}");
}

#[test]
fn pyright_answers_definition_and_hover_in_a_package() {
    let dir = scratch("lsp-py");
    write(
        &dir,
        &[
            ("pkg/__init__.py", ""),
            (
                "pkg/shapes.py",
                "class Square:\n    def __init__(self, side: float) -> None:\n        self.side = side\n\n    def area(self) -> float:\n        return self.side * self.side\n",
            ),
            ("pkg/main.py", "from pkg.shapes import Square\n\nprint(Square(2).area())\n"),
        ],
    );
    let mount = format!(
        "  python:\n    kind: lsp.stdio\n    command: {}\n    args: [--stdio]\n    extensions: {{ .py: python }}\n",
        json!(peer_bin("pyright-langserver"))
    );
    let file = composition(&dir, &mount);
    let def = lsp(&file, "goToDefinition", "pkg/main.py", 3, 17);
    assert_eq!(text(&def), "pkg/shapes.py:5:9  def area(self) -> float:", "{def}");
    let hover = lsp(&file, "hover", "pkg/main.py", 3, 17);
    assert!(text(&hover).contains("def area() -> float"), "{hover}");
}

#[test]
fn files_outside_or_unfit_for_the_workspace_are_refused_with_their_codes() {
    let dir = scratch("lsp-files");
    ts_project(&dir);
    let outside = dir.parent().unwrap().join("lsp-files-outside.ts");
    std::fs::write(&outside, "export const x = 1;\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("src/link.ts")).unwrap();
    std::fs::write(dir.join("src/latin1.ts"), b"const s = \"caf\xe9\";\n").unwrap();
    let fifo = dir.join("src/pipe.ts");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let file = composition(&dir, &typescript_mount().replace("extensions:", "max_document_bytes: 64B\n    extensions:"));
    std::fs::write(dir.join("src/at.ts"), "x".repeat(64)).unwrap();
    std::fs::write(dir.join("src/over.ts"), "x".repeat(65)).unwrap();
    let code = |path: &str| {
        let r = lsp(&file, "hover", path, 1, 1);
        r["structuredContent"]["error"]["code"].as_str().map(str::to_owned).unwrap_or_else(|| "ok".into())
    };
    assert_eq!(code("../lsp-files-outside.ts"), "LSP_OUTSIDE_WORKSPACE");
    assert_eq!(code(&outside.display().to_string()), "LSP_OUTSIDE_WORKSPACE");
    assert_eq!(code("src/link.ts"), "LSP_OUTSIDE_WORKSPACE", "a symlink out of the workspace");
    assert_eq!(code("src/pipe.ts"), "LSP_NOT_A_FILE", "a FIFO does not block");
    assert_eq!(code("src/latin1.ts"), "LSP_INVALID_UTF8");
    assert_eq!(code("src/at.ts"), "ok", "exactly max_document_bytes");
    assert_eq!(code("src/over.ts"), "LSP_FILE_TOO_LARGE", "one byte over");
    assert_eq!(code("src/missing.ts"), "LSP_NOT_A_FILE");
    assert_eq!(code(".bashrc"), "LSP_UNAVAILABLE");
    assert_eq!(code("src/x.rs"), "LSP_UNAVAILABLE");
}
