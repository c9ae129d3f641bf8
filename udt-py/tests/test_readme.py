"""The Python example of README.md ("From C++ and Python") runs as written against `udt cat`."""

import os

from conftest import free_port, run_tool, wait_for_line

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def readme_example():
    """The fenced python block of README.md's "From C++ and Python" subsection."""
    with open(README, encoding="utf-8") as f:
        section = f.read().split("### From C++ and Python")[1]
    return section.split("```python\n")[1].split("```")[0]


def test_the_readme_example_sends_hello_to_udt_cat(udt_bin):
    source = readme_example()
    assert source.count('("127.0.0.1", 9000)') == 1, source
    port = free_port()
    cat = run_tool(udt_bin, "cat", "--listen", f"127.0.0.1:{port}", "--insecure")
    try:
        wait_for_line(cat, "listening on")
        exec(compile(source.replace("9000)", f"{port})"), "README.md", "exec"), {})
        out, err = cat.communicate(timeout=30)
        assert cat.returncode == 0, err
        assert out == "hello"
    finally:
        cat.kill()
        cat.wait()
