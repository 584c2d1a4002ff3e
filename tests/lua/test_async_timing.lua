-- Pending runs made deterministic: the reference device ("ref") sleeps
-- AXLE_REF_DELAY_MS (set by CTest to 50) in every step, so a run of the
-- 1-node add.onnx on it is still in flight for ~50 ms after submit.
local T = require("testlib")
local axle = require("axle")

local delay = tonumber(os.getenv("AXLE_REF_DELAY_MS") or "")
local has_ref = false
for _, d in ipairs(axle.devices()) do has_ref = has_ref or d.name == "ref" end
if not delay or delay < 20 or not has_ref then
  print("# skipped: needs the ref device and AXLE_REF_DELAY_MS >= 20")
  T.done()
end

local function session()
  return assert(axle.session(T.model("add.onnx"), { devices = { "ref" }, strict = true }))
end

local function inputs(x)
  local t = axle.tensor({ 1, 1000 }, "float32", x)
  return { a = t, b = t }
end

T.test("a pending event: done, status, result, wait(0), poll(0)", function()
  local s = session()
  local ev = assert(s:submit(inputs(1)))
  T.eq(ev:done(), false)
  T.eq(ev:status(), "pending")
  T.fails("pending", "not completed", ev:result())
  T.fails("timeout", "still in progress", ev:wait(0))
  T.fails("timeout", nil, ev:wait(5))
  T.same(axle.poll({ ev:fd() }, 0), {})
  T.ok(tostring(ev):find("pending", 1, true))
  T.eq(ev:wait(), true)
  T.eq(ev:result().c:get(1), 2.0)
end)

T.test("every await in a coroutine yields (fd, event) and resumes to the result", function()
  local s = session()
  local tasks, yields = {}, 0
  for i = 1, 4 do
    local co = coroutine.create(function()
      local ev = assert(s:submit(inputs(i)))
      return ev:await()
    end)
    local ok, fd, ev = coroutine.resume(co)
    T.ok(ok, fd)
    T.eq(coroutine.status(co), "suspended", "task " .. i .. " waits")
    T.eq(math.type(fd), "integer")
    T.eq(ev:fd(), fd)
    tasks[fd] = { co = co, i = i }
  end
  local results = {}
  while next(tasks) do
    local fds = {}
    for fd in pairs(tasks) do fds[#fds + 1] = fd end
    for _, fd in ipairs(axle.poll(fds, 10000)) do
      local t = tasks[fd]
      tasks[fd] = nil
      yields = yields + 1
      local ok, r = coroutine.resume(t.co)
      T.ok(ok, r)
      T.eq(coroutine.status(t.co), "dead")
      results[t.i] = r.c:get(1000)
    end
  end
  T.eq(yields, 4)
  for i = 1, 4 do T.eq(results[i], 2.0 * i) end
end)

T.test("resuming early just yields again", function()
  local s = session()
  local co = coroutine.create(function() return assert(s:submit(inputs(3))):await() end)
  local _, fd1 = coroutine.resume(co)
  local _, fd2 = coroutine.resume(co, "early")
  T.eq(fd2, fd1)
  T.eq(coroutine.status(co), "suspended")
  axle.poll({ fd1 }, 10000)
  local ok, r = coroutine.resume(co)
  T.ok(ok)
  T.eq(r.c:get(1), 6.0)
end)

T.test("await under pcall inside a coroutine", function()
  local s = session()
  local co = coroutine.create(function()
    return pcall(function() return assert(s:submit(inputs(1))):await() end)
  end)
  local _, fd = coroutine.resume(co)
  T.eq(coroutine.status(co), "suspended")
  axle.poll({ fd }, 10000)
  local ok, pok, r = coroutine.resume(co)
  T.ok(ok and pok)
  T.eq(r.c:get(1), 2.0)
end)

T.test("cancel ends a pending run as cancelled", function()
  local s = session()
  local ev = assert(s:submit(inputs(1)))
  T.eq(ev:cancel(), true)
  T.fails("cancelled", nil, ev:wait(10000))
  T.eq(ev:status(), "cancelled")
  T.fails("cancelled", nil, ev:result())
end)

T.test("run timeouts: sync and async", function()
  local s = session()
  T.fails("timeout", nil, s:run(inputs(1), nil, 5))
  local ev = assert(s:submit(inputs(1), nil, 5))
  T.fails("timeout", nil, ev:wait(10000))
  -- The session still runs normally afterwards.
  T.eq(assert(s:run(inputs(1))).c:get(1), 2.0)
end)

T.test("closing a pending event cancels without waiting for the whole run", function()
  local s = session()
  local t0 = axle.clock()
  for _ = 1, 5 do assert(s:submit(inputs(1))):close() end
  T.ok(axle.clock() - t0 < 5 * delay / 1000, "faster than five full runs")
end)

T.done()
