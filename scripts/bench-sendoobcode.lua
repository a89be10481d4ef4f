-- wrk script of `make bench` (scripts/bench.py): POST accounts:sendOobCode for an email-link
-- sign-in, each request to a new address (so no per-recipient cooldown applies).
-- RUN (environment) keeps the addresses of successive runs apart.
-- DELAY_MS (environment): each connection waits this long after a reply before its next
-- request, which paces the load; 0 is a closed loop.
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
local run = os.getenv("RUN") or "0"
local threads_started = 0
local sent = 0

function setup(thread)
  thread:set("thread_id", threads_started)
  threads_started = threads_started + 1
end

function request()
  sent = sent + 1
  local body = string.format(
    '{"requestType":"EMAIL_SIGNIN","email":"bench%s.%d.%d@example.com","continueUrl":"https://localhost/welcome","canHandleCodeInApp":true}',
    run, thread_id, sent)
  return wrk.format("POST", nil, { ["Content-Type"] = "application/json" }, body)
end

-- wrk's timers count whole milliseconds (it truncates 6.7 to 6), so a fractional delay is made of its two
-- neighbours in proportion: the mean wait is DELAY_MS, and the pace can be set finer than 1 ms per connection.
local whole_ms = math.floor(delay_ms)
local fraction = delay_ms - whole_ms

function delay()
  if math.random() < fraction then
    return whole_ms + 1
  end
  return whole_ms
end
