#!/usr/bin/env python3
"""Tokens (cl100k) of `xfile callers` answers for ten Django targets,
summed, for each binary given: the size of call-graph answers, build
against build.

    pip install bpe_openai
    cd target/bench-data/django-5.2.8 && python3 ../../../scripts/call_graph_tokens.py OLD NEW
"""
import subprocess, sys

import bpe_openai

TARGETS = [
    "django/utils/text.py::capfirst", "django/db/models/base.py::Model.save",
    "django/core/exceptions.py::ValidationError", "django/urls/base.py::reverse",
    "django/utils/encoding.py::force_str", "django/db/models/query.py::QuerySet.filter",
    "django/http/response.py::HttpResponse", "django/utils/html.py::format_html",
    "django/template/loader.py::render_to_string", "django/shortcuts.py::get_object_or_404",
]


def main():
    encoding = bpe_openai.get_encoding("cl100k_base")
    for binary in sys.argv[1:]:
        total = 0
        for target in TARGETS:
            answer = subprocess.run([binary, "callers", target], capture_output=True, text=True)
            total += len(encoding.encode(answer.stdout))
        print(f"{binary}: {total} tokens over {len(TARGETS)} targets")


if __name__ == "__main__":
    main()
