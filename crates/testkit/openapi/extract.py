#!/usr/bin/env python3
"""Extract the subset of GitHub's REST OpenAPI description that the
benchops GitHub simulator serves.

Usage:
    cd /tmp && npm pack @octokit/openapi@23.0.2 && tar xzf octokit-openapi-23.0.2.tgz
    python3 extract.py /tmp/package/generated/api.github.com.json github-subset.json

Keeps only the operations listed in OPERATIONS, plus every component they
reference transitively (schemas, responses, parameters, examples, headers,
request bodies). Drops `x-webhooks` and tags. The output is deterministic:
the same input always gives the same bytes.
"""

import json
import sys

# (method, path template) of every operation the simulator serves.
OPERATIONS = [
    ("post", "/repos/{owner}/{repo}/git/blobs"),
    ("get", "/repos/{owner}/{repo}/git/blobs/{file_sha}"),
    ("post", "/repos/{owner}/{repo}/git/trees"),
    ("get", "/repos/{owner}/{repo}/git/trees/{tree_sha}"),
    ("post", "/repos/{owner}/{repo}/git/commits"),
    ("get", "/repos/{owner}/{repo}/git/commits/{commit_sha}"),
    ("get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("post", "/repos/{owner}/{repo}/git/refs"),
    ("patch", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("delete", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("get", "/repos/{owner}/{repo}/git/matching-refs/{ref}"),
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    ("put", "/repos/{owner}/{repo}/contents/{path}"),
    ("delete", "/repos/{owner}/{repo}/contents/{path}"),
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("post", "/repos/{owner}/{repo}/statuses/{sha}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/status"),
    ("get", "/repos/{owner}/{repo}/issues"),
    ("post", "/repos/{owner}/{repo}/issues"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("patch", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("delete", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("get", "/repos/{owner}/{repo}/labels"),
    ("post", "/repos/{owner}/{repo}/labels"),
    ("get", "/repos/{owner}/{repo}/labels/{name}"),
    ("get", "/app"),
    ("get", "/repos/{owner}/{repo}/installation"),
    ("post", "/app/installations/{installation_id}/access_tokens"),
    ("delete", "/installation/token"),
    ("get", "/rate_limit"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/environments/{environment_name}"),
    ("put", "/repos/{owner}/{repo}/environments/{environment_name}"),
    ("get", "/repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies"),
    ("post", "/repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies"),
    ("get", "/repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies/{branch_policy_id}"),
    ("get", "/repos/{owner}/{repo}/rulesets"),
    ("post", "/repos/{owner}/{repo}/rulesets"),
    ("get", "/repos/{owner}/{repo}/rulesets/{ruleset_id}"),
]

PREFIX = "#/components/"


def refs_in(node, found):
    """Collect every `$ref` string under `node`."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value)
            else:
                refs_in(value, found)
    elif isinstance(node, list):
        for item in node:
            refs_in(item, found)


def main(src, dst):
    with open(src, encoding="utf-8") as f:
        spec = json.load(f)

    paths = {}
    for method, path in OPERATIONS:
        item = spec["paths"].get(path)
        if item is None or method not in item:
            sys.exit(f"operation {method.upper()} {path} is not in {src}")
        out = paths.setdefault(path, {})
        if "parameters" in item:
            out["parameters"] = item["parameters"]
        out[method] = item[method]

    wanted = set()
    refs_in(paths, wanted)
    done = set()
    components = {}
    while wanted - done:
        ref = sorted(wanted - done)[0]
        done.add(ref)
        if not ref.startswith(PREFIX):
            sys.exit(f"unsupported $ref {ref}")
        kind, name = ref[len(PREFIX):].split("/", 1)
        node = spec["components"][kind][name]
        components.setdefault(kind, {})[name] = node
        refs_in(node, wanted)

    subset = {
        "openapi": spec["openapi"],
        "info": spec["info"],
        "servers": spec.get("servers", []),
        "externalDocs": spec.get("externalDocs", {}),
        "paths": {p: paths[p] for p in sorted(paths)},
        "components": {
            kind: {n: components[kind][n] for n in sorted(components[kind])}
            for kind in sorted(components)
        },
    }
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(subset, f, indent=1, ensure_ascii=False)
        f.write("\n")
    count = sum(len(v) for v in components.values())
    print(f"{len(OPERATIONS)} operations, {count} components -> {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
