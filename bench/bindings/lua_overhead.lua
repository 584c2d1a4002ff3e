-- Per-run overhead of a synchronous run through the Lua binding.
--
--   LUA_CPATH='build/lib/lua/5.4/?.so' AXLE_PLUGIN_PATH=build/lib/axle/plugins \
--     lua5.4 bench/bindings/lua_overhead.lua [MODEL] [RUNS] [C_BENCH]
--
-- MODEL defaults to tests/models/add.onnx (1-node Add, 1x1000 float32), RUNS
-- to 20000 (at least 10000), after 1000 warm-up runs. Prints median, p10 and
-- p90 per run for
--   lua run (new outputs)   s:run{a = x, b = x}: a result table and a new
--                           output tensor per run (what most code writes)
--   lua run (in place)      s:run(inputs, {c = out}): the caller's tensor is
--                           written, no output allocation
-- and, when C_BENCH (build/bin/axle_bench_overhead) is given, runs it on the
-- same model in the same process tree so the Lua-minus-C difference is
-- measured under the same conditions. Figures only: never fails on time.
local axle = require("axle")

local model = arg[1] or "tests/models/add.onnx"
local runs = math.max(10000, math.tointeger(tonumber(arg[2] or "20000")) or 20000)
local c_bench = arg[3]

local s = assert(axle.session(model))
local inputs = {}
local shared
for _, info in ipairs(s:inputs()) do
  -- One tensor bound to every input, as the C benchmark does.
  shared = shared or axle.tensor(info.shape, info.dtype, 1)
  inputs[info.name] = shared
end
local out_info = s:outputs()[1]
local out = axle.tensor(out_info.shape, out_info.dtype)
local in_place = { [out_info.name] = out }

local clock = axle.clock

local function measure(label, fn)
  for _ = 1, 1000 do fn() end
  local t = {}
  for i = 1, runs do
    local t0 = clock()
    fn()
    t[i] = (clock() - t0) * 1e6
  end
  table.sort(t)
  local median, p10, p90 = t[runs // 2 + 1], t[runs // 10 + 1], t[runs * 9 // 10 + 1]
  print(string.format("%-34s median %7.3f us  p10 %7.3f us  p90 %7.3f us  (%d runs)", label,
    median, p10, p90, runs))
  return median
end

print(string.format("model: %s  (%s, axle %s)", model, _VERSION, axle.version))
local m_new = measure("lua run (new outputs)", function()
  local r = s:run(inputs)
  if not r then error("run failed") end
end)
local m_in = measure("lua run (in place)", function()
  local r = s:run(inputs, in_place)
  if not r then error("run failed") end
end)

if c_bench then
  local p = assert(io.popen(string.format("%q %q %d", c_bench, model, runs)))
  local text = p:read("a")
  p:close()
  io.write(text)
  -- The C benchmark prints caller-owned outputs first, then library-allocated.
  local medians = {}
  for m in text:gmatch("median%s+([%d.]+) us") do medians[#medians + 1] = tonumber(m) end
  if #medians >= 2 then
    print(string.format("lua over C: %+.3f us (in place vs caller-owned), %+.3f us (new outputs)",
      m_in - medians[1], m_new - medians[2]))
  end
end
