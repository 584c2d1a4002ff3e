-- Handle lifetimes: __close with <close> variables, __gc of many objects
-- with stable memory, and finalization order at exit.
local T = require("testlib")
local axle = require("axle")

local add = T.model("add.onnx")

T.test("<close> closes session, tensor and event at the end of the scope", function()
  local s_out, t_out, e_out
  do
    local s <close> = assert(axle.session(add))
    local t <close> = axle.tensor({ 1, 1000 }, "float32", 1)
    local ev <close> = assert(s:submit { a = t, b = t })
    T.eq(ev:wait(), true)
    s_out, t_out, e_out = s, t, ev
  end
  T.raises("closed axle.session", s_out.inputs, s_out)
  T.raises("closed axle.tensor", t_out.get, t_out, 1)
  T.raises("closed axle.event", e_out.wait, e_out)
end)

T.test("<close> also closes when the scope is left by an error", function()
  local keep
  local ok, err = pcall(function()
    local s <close> = assert(axle.session(add))
    keep = s
    error("boom")
  end)
  T.eq(ok, false)
  T.ok(tostring(err):find("boom", 1, true))
  T.raises("closed axle.session", keep.inputs, keep)
end)

T.test("result tensors stay valid after the session is closed", function()
  local s = assert(axle.session(add))
  local t = axle.tensor({ 1, 1000 }, "float32", 2)
  local c = assert(s:run { a = t, b = t }).c
  s:close()
  t:close()
  collectgarbage()
  T.eq(c:get(1, 1000), 4.0)
end)

-- Lua heap in KiB and resident memory in bytes after a full collection.
local function memory()
  collectgarbage()
  collectgarbage()
  return collectgarbage("count"), T.rss()
end

T.test("100,000 tensors are collected without growth", function()
  local function churn()
    for _ = 1, 10000 do
      local t = axle.tensor({ 1000 }, "float32", 1.0) -- 4 KB of C memory each
      t:set(1, 2.0)
    end
  end
  churn()
  local heap0, rss0 = memory()
  for _ = 1, 10 do churn() end
  local heap1, rss1 = memory()
  print(string.format("# lua heap %.0f -> %.0f KiB; rss %.1f -> %.1f MiB", heap0, heap1,
    (rss0 or 0) / 2 ^ 20, (rss1 or 0) / 2 ^ 20))
  T.ok(heap1 - heap0 < 256, "Lua heap stable")
  -- 100,000 leaked tensors would be 400 MB; allow allocator noise.
  if rss0 and not T.asan then T.ok(rss1 - rss0 < 32 * 2 ^ 20, "resident memory stable") end
end)

-- Peak resident memory (VmHWM) in bytes.
local function peak()
  local f = io.open("/proc/self/status", "r")
  if not f then return nil end
  local kb = f:read("a"):match("VmHWM:%s*(%d+)")
  f:close()
  return kb and tonumber(kb) * 1024
end

T.test("garbage tensors do not pile up between collections", function()
  -- 400 KB each, 1 GB in all: the collector sees only small boxes, so the
  -- binding must pace it by the library memory the boxes hold. Both modes:
  -- lua5.4 starts generational, where a tensor still referenced while the
  -- next one is made is promoted and waits for a major collection.
  for _, mode in ipairs({ "generational", "incremental" }) do
    local previous = collectgarbage(mode)
    collectgarbage()
    local before = peak()
    local t
    for _ = 1, 2500 do t = axle.tensor({ 100000 }, "float32") end
    t = nil
    local after = peak()
    collectgarbage(previous)
    print(string.format("# %s: peak rss %.1f -> %.1f MiB", mode, (before or 0) / 2 ^ 20,
      (after or 0) / 2 ^ 20))
    if before and not T.asan then T.ok(after - before < 256 * 2 ^ 20, mode .. ": bounded") end
  end
end)

T.test("10,000 runs keep memory stable", function()
  local s = assert(axle.session(add))
  local a = axle.tensor({ 1, 1000 }, "float32", 1)
  local inputs = { a = a, b = a }
  for _ = 1, 1000 do assert(s:run(inputs)) end
  local heap0, rss0 = memory()
  for _ = 1, 10000 do
    local r = s:run(inputs)
    if not r then error("run failed") end
  end
  local heap1, rss1 = memory()
  print(string.format("# lua heap %.0f -> %.0f KiB; rss %.1f -> %.1f MiB", heap0, heap1,
    (rss0 or 0) / 2 ^ 20, (rss1 or 0) / 2 ^ 20))
  T.ok(heap1 - heap0 < 256, "Lua heap stable")
  if rss0 and not T.asan then T.ok(rss1 - rss0 < 16 * 2 ^ 20, "resident memory stable") end
end)

T.test("sessions and events are collected", function()
  for _ = 1, 50 do
    local s = assert(axle.session(add))
    local a = axle.tensor({ 1, 1000 })
    assert(s:submit { a = a, b = a })
    assert(s:run { a = a, b = a })
  end
  local heap0, rss0 = memory()
  for _ = 1, 200 do
    local s = assert(axle.session(add))
    local a = axle.tensor({ 1, 1000 })
    local ev = assert(s:submit { a = a, b = a })
    ev:wait()
    assert(s:run { a = a, b = a })
  end
  local heap1, rss1 = memory()
  T.ok(heap1 - heap0 < 256, "Lua heap stable")
  if rss0 and not T.asan then T.ok(rss1 - rss0 < 16 * 2 ^ 20, "resident memory stable") end
end)

T.test("handles left open at exit are finalized in any order", function()
  -- T.done() closes the state: these finalizers run there, the session's
  -- before or after its pending event's, with the runtime released last.
  _G.left_open = {
    s = assert(axle.session(T.source .. "/examples/digits/digits.onnx")),
  }
  local img = axle.tensor({ 1, 1, 8, 8 }, "float32", 0.25)
  for i = 1, 8 do _G.left_open[i] = assert(_G.left_open.s:submit { image = img }) end
  _G.left_open.out = assert(_G.left_open.s:run { image = img }).scores
end)

T.done()
