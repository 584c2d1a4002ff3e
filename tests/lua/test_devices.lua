-- axle.version, axle.devices()
local T = require("testlib")
local axle = require("axle")

T.test("version", function()
  T.eq(type(axle.version), "string")
  T.ok(axle.version:match("^%d+%.%d+%.%d+$"), "version looks like x.y.z: " .. axle.version)
  T.eq(math.type(axle.version_number), "integer")
  local ma, mi, pa = axle.version:match("^(%d+)%.(%d+)%.(%d+)$")
  T.eq(axle.version_number, tonumber(ma) * 10000 + tonumber(mi) * 100 + tonumber(pa))
end)

T.test("devices lists the cpu device", function()
  local devices = axle.devices()
  T.eq(type(devices), "table")
  T.ok(#devices >= 1, "at least one device")
  local cpu
  for i, d in ipairs(devices) do
    for _, key in ipairs({ "name", "description", "plugin", "kind" }) do
      T.eq(type(d[key]), "string", "devices[" .. i .. "]." .. key)
    end
    T.eq(type(d.emulated), "boolean")
    T.eq(math.type(d.memory), "integer")
    T.eq(type(d.dtypes), "table")
    if d.name == "cpu" then cpu = d end
  end
  T.ok(cpu, "a device named cpu")
  T.eq(cpu.kind, "cpu")
  T.eq(cpu.plugin, "cpu")
  T.eq(cpu.emulated, false)
  local has_f32 = false
  for _, dt in ipairs(cpu.dtypes) do has_f32 = has_f32 or dt == "float32" end
  T.ok(has_f32, "cpu runs float32")
end)

T.test("devices are stable across calls (one runtime per state)", function()
  local a, b = axle.devices(), axle.devices()
  T.eq(#a, #b)
  for i = 1, #a do T.same(b[i], a[i]) end
end)

T.test("the reference device, when built, is emulated", function()
  for _, d in ipairs(axle.devices()) do
    if d.name == "ref" then
      T.eq(d.emulated, true)
      T.eq(d.plugin, "reference")
    end
  end
end)

T.done()
