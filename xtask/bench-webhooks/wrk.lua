-- wrk script of `cargo xtask bench-webhooks`: POSTs one webhook body the
-- way GitHub delivers it, with a distinct X-GitHub-Delivery per request.
--
--   wrk -t2 -c64 -d15s -s wrk.lua URL -- BODY_FILE SIGNATURE PREFIX [EVENT]
--
-- BODY_FILE  the request body, sent byte for byte
-- SIGNATURE  the X-Hub-Signature-256 value ("sha256=<hex>"); a wrong one
--            makes a bad-signature flood
-- PREFIX     the first two groups of the delivery id, "xxxxxxxx-xxxx" in
--            hex; each request appends "-4ttt-a000-cccccccccccc" (thread,
--            counter), so ids are UUID-shaped and unique per run
-- EVENT      X-GitHub-Event, "push" unless given
--
-- When the run ends, `done` prints one line
--   BENCH_RESULT {"requests":…,"duration_us":…,"latency_us":{"p50":…,…},…}
-- with the latency percentiles in microseconds, for the xtask to parse.

local next_thread = 0

function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
end

local counter = 0
local prefix = "00000000-0000"

function init(args)
  local path = args[1]
  if path == nil or args[2] == nil or args[3] == nil then
    error("usage: wrk ... -s wrk.lua URL -- BODY_FILE SIGNATURE PREFIX [EVENT]")
  end
  local file = assert(io.open(path, "rb"))
  local body = file:read("*a")
  file:close()
  prefix = args[3]
  wrk.method = "POST"
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["User-Agent"] = "GitHub-Hookshot/bench"
  wrk.headers["X-GitHub-Event"] = args[4] or "push"
  wrk.headers["X-GitHub-Hook-ID"] = "1"
  wrk.headers["X-Hub-Signature-256"] = args[2]
end

function request()
  counter = counter + 1
  wrk.headers["X-GitHub-Delivery"] =
    string.format("%s-4%03x-a000-%012x", prefix, tid % 4096, counter)
  return wrk.format()
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d,"mean":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean))
end
