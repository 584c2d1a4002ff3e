-- s:submit, events (wait, done, status, fd, result, cancel) and ev:await()
-- inside coroutines driven by a scheduler that polls event fds. Runs here
-- take microseconds, so whether one is still pending when looked at is up to
-- the OS scheduler; test_async_timing.lua covers the pending states with
-- deliberately slow runs.
local T = require("testlib")
local axle = require("axle")

local add = T.model("add.onnx")

local function add_inputs(x, y)
  return { a = axle.tensor({ 1, 1000 }, "float32", x), b = axle.tensor({ 1, 1000 }, "float32", y) }
end

T.test("submit, wait, result", function()
  local s = assert(axle.session(add))
  local ev = assert(s:submit(add_inputs(1, 2)))
  T.eq(getmetatable(ev).__name, "axle.event")
  T.eq(ev:wait(), true)
  T.eq(ev:done(), true)
  T.eq(ev:status(), "ok")
  local r = assert(ev:result())
  T.eq(r.c:get(1), 3.0)
  T.eq(r.c:get(1000), 3.0)
  T.ok(rawequal(ev:result(), r), "result() returns the same table")
  T.eq(ev:wait(0), true, "waiting again is immediate")
  T.ok(tostring(ev):find("axle.event (ok)", 1, true), tostring(ev))
end)

T.test("selected outputs of a submit", function()
  local s = assert(axle.session(add))
  local ev = assert(s:submit(add_inputs(1, 1), { "c" }, 5000))
  local r = assert(ev:await()) -- outside a coroutine: blocks
  T.eq(r.c:get(3), 2.0)
end)

T.test("the fd becomes readable when the run ends", function()
  local s = assert(axle.session(add))
  local ev = assert(s:submit(add_inputs(1, 2)))
  local fd = ev:fd()
  T.eq(math.type(fd), "integer")
  T.ok(fd >= 0)
  local ready = axle.poll({ fd }, 10000)
  T.same(ready, { fd })
  T.eq(ev:done(), true)
  -- Events stand for their fd in axle.poll, and come back as themselves.
  local ready2 = axle.poll({ ev }, 0)
  T.eq(#ready2, 1)
  T.ok(rawequal(ready2[1], ev))
  T.same(axle.poll({}, 0), {})
end)

T.test("many runs in flight at once", function()
  local s = assert(axle.session(add))
  local events = {}
  for i = 1, 64 do events[i] = assert(s:submit(add_inputs(i, 0.5))) end
  for i = 1, 64 do
    T.eq(events[i]:wait(10000), true)
    T.eq(events[i]:result().c:get(1, 500), i + 0.5)
  end
end)

-- The scheduler a host would run: resume every task once; a task that
-- yields from ev:await() hands back (fd, event); poll those fds and resume
-- the tasks whose fd is readable, until all are dead.
local function run_tasks(fns)
  local tasks, yields = {}, 0
  for i, fn in ipairs(fns) do
    local co = coroutine.create(fn)
    local ok, fd, ev = coroutine.resume(co)
    assert(ok, fd)
    tasks[i] = { co = co, fd = fd, ev = ev }
  end
  while true do
    local fds, by_fd = {}, {}
    for _, t in ipairs(tasks) do
      if coroutine.status(t.co) == "suspended" then
        T.eq(math.type(t.fd), "integer", "await yields the fd")
        T.eq(getmetatable(t.ev).__name, "axle.event", "and the event")
        fds[#fds + 1] = t.fd
        by_fd[t.fd] = t
      end
    end
    if #fds == 0 then break end
    for _, fd in ipairs(axle.poll(fds, 10000)) do
      local t = by_fd[fd]
      yields = yields + 1
      local ok, nfd, nev = coroutine.resume(t.co)
      assert(ok, nfd)
      t.fd, t.ev = nfd, nev
    end
  end
  return yields
end

T.test("await inside coroutines yields until the run completes", function()
  local s = assert(axle.session(add))
  local results, fns = {}, {}
  for i = 1, 32 do
    fns[i] = function()
      local ev = assert(s:submit(add_inputs(i, i)))
      local r = assert(ev:await())
      results[i] = r.c:get(1)
    end
  end
  local yields = run_tasks(fns)
  for i = 1, 32 do T.eq(results[i], 2.0 * i) end
  -- Usually most suspend, but a worker that preempts the Lua thread can
  -- finish a run before await looks; test_async_timing.lua makes runs slow
  -- enough to assert the yield path.
  print(string.format("# %d of 32 awaits yielded", yields))
end)

T.test("a resume before completion simply yields again", function()
  local s = assert(axle.session(T.source .. "/examples/digits/digits.onnx"))
  local co = coroutine.wrap(function()
    local ev = assert(s:submit { image = axle.tensor({ 1, 1, 8, 8 }, "float32", 0.5) })
    return ev:await()
  end)
  local first, result = co()
  local spins = 0
  while type(first) == "number" do
    spins = spins + 1
    first, result = co("ignored", "resume", "values")
  end
  T.eq(type(first), "table", "the result table at the end")
  T.eq(result, nil)
  T.eq(#first.scores, 10)
end)

T.test("await of an already finished event returns without yielding", function()
  local s = assert(axle.session(add))
  local ev = assert(s:submit(add_inputs(1, 1)))
  ev:wait()
  local co = coroutine.create(function() return ev:await() end)
  local ok, r = coroutine.resume(co)
  T.ok(ok)
  T.eq(coroutine.status(co), "dead")
  T.eq(r.c:get(1), 2.0)
end)

T.test("cancel and timeouts", function()
  local s = assert(axle.session(add))
  local ev = assert(s:submit(add_inputs(1, 1)))
  T.eq(ev:cancel(), true)
  local ok, msg, code = ev:wait(10000)
  if ok then
    T.eq(ev:status(), "ok") -- it finished before the cancel was seen
  else
    T.eq(code, "cancelled", msg)
    T.eq(ev:status(), "cancelled")
    T.fails("cancelled", nil, ev:result())
    T.fails("cancelled", nil, ev:await())
  end
  -- wait(0) on a pending run reports a timeout without blocking; any status
  -- is valid here since the run may already be done.
  local ev2 = assert(s:submit(add_inputs(1, 1)))
  local ok2, _, code2 = ev2:wait(0)
  T.ok(ok2 == true or code2 == "timeout", tostring(code2))
  if not ok2 then
    local r, _, c = ev2:result()
    T.ok(r ~= nil or c == "pending")
  end
  T.eq(ev2:wait(), true)
end)

T.test("an event outlives its session and its input tensors", function()
  local s = assert(axle.session(add))
  local inputs = add_inputs(3, 4)
  local ev = assert(s:submit(inputs))
  inputs.a:close() -- the library holds its own reference while it runs
  s:close()        -- waits until the run no longer needs the session
  -- The event itself may be marked done a moment after the session is gone.
  T.eq(ev:wait(10000), true)
  T.eq(ev:result().c:get(1), 7.0)
end)

T.test("closing or dropping a pending event cancels it safely", function()
  local s = assert(axle.session(add))
  for _ = 1, 50 do
    local ev = assert(s:submit(add_inputs(1, 1)))
    ev:close()
  end
  for _ = 1, 50 do assert(s:submit(add_inputs(1, 1))) end
  collectgarbage()
  collectgarbage()
  T.eq(assert(s:run(add_inputs(2, 2))).c:get(1), 4.0)
end)

T.done()
