-- axle.session: metadata, synchronous runs on add.onnx and the digits model,
-- output selection and in-place outputs, placement, profiling.
local T = require("testlib")
local axle = require("axle")
package.path = T.source .. "/examples/lua-host/?.lua;" .. package.path
local images = require("images")

-- Deterministic pseudo-random floats in [-8, 8) (a small LCG, so the test
-- does not depend on math.random's algorithm).
local function values(n, seed)
  local v, x = {}, seed
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    v[i] = (x / 2147483648) * 16 - 8
  end
  return v
end

T.test("add.onnx: metadata", function()
  local s = assert(axle.session(T.model("add.onnx")))
  T.same(s:inputs(), {
    { name = "a", dtype = "float32", shape = { 1, 1000 } },
    { name = "b", dtype = "float32", shape = { 1, 1000 } },
  })
  T.same(s:outputs(), { { name = "c", dtype = "float32", shape = { 1, 1000 } } })
  T.eq(s.path, T.model("add.onnx"))
  T.ok(tostring(s):find("axle.session(", 1, true))
  local st = s:stats()
  T.eq(st.nodes, 1)
  T.eq(st.partitions, 1)
end)

T.test("add.onnx: c = a + b exactly as float32 arithmetic", function()
  local s = assert(axle.session(T.model("add.onnx")))
  local av, bv = values(1000, 1), values(1000, 2)
  local a = axle.tensor({ 1, 1000 }, "float32", { av })
  local b = axle.tensor({ 1, 1000 }, "float32", { bv })
  local r = assert(s:run { a = a, b = b })
  local c = r.c
  T.eq(getmetatable(c).__name, "axle.tensor")
  T.same(c.shape, { 1, 1000 })
  T.eq(#c, 1000)
  for i = 1, 1000 do
    T.eq(c:get(1, i), T.f32(T.f32(av[i]) + T.f32(bv[i])), "element " .. i)
  end
  -- Every key of the result is an output name.
  local keys = 0
  for k in pairs(r) do
    keys = keys + 1
    T.eq(k, "c")
  end
  T.eq(keys, 1)
end)

T.test("output selection, in-place outputs and a run timeout", function()
  local s = assert(axle.session(T.model("add.onnx")))
  local a = axle.tensor({ 1, 1000 }, "float32", 1.25)
  local b = axle.tensor({ 1, 1000 }, "float32", 2.0)
  local r = assert(s:run({ a = a, b = b }, { "c" }))
  T.eq(r.c:get(1000), 3.25)
  local out = axle.tensor({ 1, 1000 })
  local r2 = assert(s:run({ a = a, b = b }, { c = out }))
  T.ok(rawequal(r2.c, out), "the caller's tensor comes back")
  T.eq(out:get(1, 1), 3.25)
  T.eq(out:get(1, 1000), 3.25)
  local r3 = assert(s:run({ a = a, b = b }, nil, 10000))
  T.eq(r3.c:get(7), 3.25)
  -- The same input tensor may be bound to two inputs.
  local r4 = assert(s:run { a = a, b = a })
  T.eq(r4.c:get(1), 2.5)
end)

-- Sample files are <label>_<index>.pgm / .npy.
local function samples(ext)
  local out = {}
  for _, name in ipairs(T.listdir(T.samples)) do
    local label = name:match("^(%d)_%d+%." .. ext .. "$")
    if label then out[#out + 1] = { name = name, label = tonumber(label) } end
  end
  return out
end

local function argmax(t)
  local best, arg = -math.huge, nil
  for i = 1, #t do
    if t:get(i) > best then best, arg = t:get(i), i - 1 end
  end
  return arg, best
end

T.test("digits: every sample is classified as its file-name label", function()
  local s = assert(axle.session(T.source .. "/examples/digits/digits.onnx"))
  T.same(s:inputs()[1], { name = "image", dtype = "float32", shape = { 1, 1, 8, 8 } })
  T.same(s:outputs()[1], { name = "scores", dtype = "float32", shape = { 1, 10 } })
  for _, ext in ipairs({ "pgm", "npy" }) do
    local list = samples(ext)
    T.eq(#list, 10, "ten ." .. ext .. " samples")
    for _, sample in ipairs(list) do
      local image = assert(images.read(T.samples .. "/" .. sample.name, { 1, 1, 8, 8 }))
      local scores = assert(s:run { image = image }).scores
      T.same(scores.shape, { 1, 10 })
      local sum = 0
      for i = 1, 10 do sum = sum + scores:get(1, i) end
      T.near(sum, 1.0, 1e-5, sample.name .. " softmax sums to 1")
      T.eq(argmax(scores), sample.label, sample.name)
    end
  end
end)

T.test("digits: 7_634.pgm gives the README's scores", function()
  local s = assert(axle.session(T.source .. "/examples/digits/digits.onnx"))
  local image = assert(images.read(T.samples .. "/7_634.pgm", { 1, 1, 8, 8 }))
  local scores = assert(s:run { image = image }).scores:totable()[1]
  T.near(scores[8], 0.999125, 2e-6, "class 7")
  T.near(scores[10], 0.00083914, 2e-7, "class 9")
  T.near(scores[4], 2.93577e-05, 2e-9, "class 3")
end)

T.test("pgm and npy pixels agree to within the 8-bit rounding", function()
  for _, sample in ipairs(samples("pgm")) do
    local stem = sample.name:gsub("%.pgm$", "")
    local p = assert(images.read(T.samples .. "/" .. stem .. ".pgm", { 1, 1, 8, 8 }))
    local n = assert(images.read(T.samples .. "/" .. stem .. ".npy", { 1, 1, 8, 8 }))
    for i = 1, 64 do T.near(p:get(i), n:get(i), 1 / 500, stem .. " pixel " .. i) end
  end
end)

T.test("options: devices, threads, profile; placement text and json; trace", function()
  local s = assert(axle.session(T.source .. "/examples/digits/digits.onnx",
    { devices = { "cpu" }, threads = 1, profile = true, strict = false }))
  local image = axle.tensor({ 1, 1, 8, 8 }, "float32", 0.5)
  assert(s:run { image = image })
  local text = s:placement()
  T.ok(text:find("conv1", 1, true) and text:find("cpu", 1, true), text)
  local json = s:placement("json")
  T.eq(json:sub(1, 1), "{")
  T.ok(json:find('"device":"cpu"', 1, true), json)
  local trace = s:trace()
  T.ok(trace:find('"traceEvents"', 1, true), "trace JSON")
  T.ok(trace:find('"conv1"', 1, true), "per-node events")
  local path = os.tmpname()
  T.eq(s:trace(path), true)
  T.eq(T.readfile(path), s:trace())
  os.remove(path)
  s:trace_clear()
  T.ok(not s:trace():find('"conv1"', 1, true), "cleared")
  -- A single device name may be given as a string.
  assert(axle.session(T.model("add.onnx"), { devices = "cpu" }))
end)

local function has_ref()
  for _, d in ipairs(axle.devices()) do
    if d.name == "ref" then return true end
  end
  return false
end

T.test("mixed.onnx on ref falls back to cpu and agrees with cpu alone", function()
  if not has_ref() then
    print("# skipped: no reference device")
    return
  end
  local x = axle.tensor({ 1, 2, 4, 4 }, "float32", values(32, 3))
  local on_ref = assert(axle.session(T.model("mixed.onnx"), { devices = { "ref" } }))
  local on_cpu = assert(axle.session(T.model("mixed.onnx")))
  T.ok(on_ref:placement():find("fallback", 1, true), on_ref:placement())
  local y1 = assert(on_ref:run { x = x }).y
  local y2 = assert(on_cpu:run { x = x }).y
  T.same(y1.shape, { 1, 3, 4, 4 })
  for i = 1, #y1 do T.near(y1:get(i), y2:get(i), 1e-5, "element " .. i) end
end)

T.done()
