"""Writes an article-like HTML page of about N bytes: headings, paragraphs with
links and emphasis, lists, a table, code, and the script/style noise real pages carry."""
import sys

target, out = int(sys.argv[1]), sys.argv[2]
head = "<!doctype html><html><head><meta charset=utf-8><title>Bench page</title><style>body{font:16px sans-serif}</style><script>window.x=1</script></head><body><nav><ul><li><a href=/>Home</a></li><li><a href=/docs>Docs</a></li></ul></nav><main>"
parts, size, i = [head], len(head), 0
while size < target:
    s = (f"<h2>Section {i}</h2><p>Paragraph {i} of the page, with <a href=\"/page/{i}\">a link</a>, <em>emphasis</em>, "
         f"<strong>strong text</strong> and <code>inline_code({i})</code>. Lorem ipsum dolor sit amet, consectetur adipiscing elit, "
         f"sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p><ul><li>first item {i}</li><li>second item "
         f"<a href=\"https://example.com/{i}\">elsewhere</a></li></ul><table><tr><th>key</th><th>value</th></tr><tr><td>k{i}</td>"
         f"<td>v{i}</td></tr></table><pre><code>fn f{i}() -> u32 {{ {i} }}</code></pre><script>track({i})</script>\n")
    parts.append(s)
    size += len(s)
    i += 1
parts.append("</main></body></html>\n")
open(out, "w").write("".join(parts))
