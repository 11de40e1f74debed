// The Node peer of `cargo xtask bench-webhooks`: a GitHub webhook receiver
// built the way a Probot App receives webhooks, on @octokit/webhooks's
// `createNodeMiddleware`. It verifies `X-Hub-Signature-256` with the shared
// secret, runs the `push` handler and answers 200 ("ok"), or 400/401 for a
// request without the webhook headers or with a wrong signature.
//
//   node receiver.mjs --port PORT --secret-file FILE [--workers N]
//
// --workers N > 1 runs a cluster of N worker processes sharing the port.
// The secret can also come from BENCH_WEBHOOK_SECRET. `GET /healthz`
// answers 200. Prints `listening on HOST:PORT` on stderr once every worker
// is bound. SIGTERM or SIGINT stops the primary and its workers.

import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import http from "node:http";
import { parseArgs } from "node:util";

import { Webhooks, createNodeMiddleware } from "@octokit/webhooks";

const { values: opts } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string" },
    path: { type: "string", default: "/webhook" },
    "secret-file": { type: "string" },
    workers: { type: "string", default: "1" },
  },
});

function fail(message) {
  process.stderr.write(`receiver: ${message}\n`);
  process.exit(2);
}

const port = Number.parseInt(opts.port ?? "", 10);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  fail("--port PORT is required");
}
const workers = Number.parseInt(opts.workers, 10);
if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
  fail("--workers must be between 1 and 64");
}

function readSecret() {
  if (opts["secret-file"]) {
    return readFileSync(opts["secret-file"], "utf8").trim();
  }
  if (process.env.BENCH_WEBHOOK_SECRET) {
    return process.env.BENCH_WEBHOOK_SECRET;
  }
  return fail("--secret-file FILE or BENCH_WEBHOOK_SECRET is required");
}

// One receiving server: the middleware at `path`, `/healthz`, 404 elsewhere.
function serve(onListening) {
  const secret = readSecret();
  if (!secret) {
    fail("the webhook secret is empty");
  }
  const webhooks = new Webhooks({ secret });
  let pushes = 0;
  webhooks.on("push", ({ payload }) => {
    // The work a small App does on a push: look at the ref, count it.
    if (typeof payload.ref === "string") {
      pushes += 1;
    }
  });
  process.on("exit", () => {
    if (process.env.BENCH_RECEIVER_VERBOSE) {
      process.stderr.write(`receiver ${process.pid}: ${pushes} push events\n`);
    }
  });
  // Quiet on the happy path, like a production Probot at level "info":
  // no line per delivery; errors still reach stderr.
  const log = {
    debug() {},
    info() {},
    warn(...args) {
      console.warn(...args);
    },
    error(...args) {
      console.error(...args);
    },
  };
  const middleware = createNodeMiddleware(webhooks, { path: opts.path, log });
  const server = http.createServer((req, res) => {
    if (req.method === "GET" && req.url === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok\n");
      return;
    }
    middleware(req, res, () => {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found\n");
    });
  });
  server.keepAliveTimeout = 65_000;
  server.on("error", (error) => fail(`cannot listen on ${opts.host}:${port}: ${error.message}`));
  server.listen(port, opts.host, onListening);
  const stop = () => {
    server.close();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

if (workers === 1) {
  serve(() => process.stderr.write(`listening on ${opts.host}:${port}\n`));
} else if (cluster.isPrimary) {
  let listening = 0;
  let stopping = false;
  for (let i = 0; i < workers; i += 1) {
    cluster.fork();
  }
  cluster.on("listening", () => {
    listening += 1;
    if (listening === workers) {
      process.stderr.write(`listening on ${opts.host}:${port} (${workers} workers)\n`);
    }
  });
  cluster.on("exit", (worker, code, signal) => {
    if (!stopping) {
      stopping = true;
      for (const other of Object.values(cluster.workers)) {
        other?.process.kill("SIGTERM");
      }
      fail(`worker ${worker.process.pid} exited (${signal ?? code})`);
    }
  });
  const stop = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers)) {
      worker?.process.kill("SIGTERM");
    }
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
} else {
  serve(() => {});
}
