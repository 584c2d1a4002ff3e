-- The error convention: misuse raises; run-time failures return
-- nil, message, code (code = status name, as axle_status_string gives it).
local T = require("testlib")
local axle = require("axle")

local add = T.model("add.onnx")
local function inputs()
  return { a = axle.tensor({ 1, 1000 }), b = axle.tensor({ 1, 1000 }) }
end

T.test("run-time: model files", function()
  T.fails("not found", "no_such_model.onnx", axle.session("no_such_model.onnx"))
  T.fails("invalid model", "bad_garbage.onnx", axle.session(T.model("bad_garbage.onnx")))
  T.fails("invalid model", "bad_truncated.onnx", axle.session(T.model("bad_truncated.onnx")))
  T.fails("invalid model", "ghost", axle.session(T.model("bad_dangling.onnx")))
end)

T.test("run-time: devices and strict mode", function()
  T.fails("not found", "unknown device 'nope'", axle.session(add, { devices = { "nope" } }))
  T.fails("unsupported", "AxleNoSuchOp", axle.session(T.model("unsupported_op.onnx"), { strict = true }))
  T.fails("unsupported", "AxleNoSuchOp", axle.session(T.model("unsupported_op.onnx")))
  for _, d in ipairs(axle.devices()) do
    if d.name == "ref" then
      T.fails("unsupported", "strict", axle.session(T.model("mixed.onnx"), { devices = { "ref" }, strict = true }))
      assert(axle.session(T.model("mixed.onnx"), { devices = { "ref" }, strict = false }))
    end
  end
end)

T.test("run-time: inputs and outputs of a run", function()
  local s = assert(axle.session(add))
  local a = axle.tensor({ 1, 1000 })
  T.fails("not found", "no input 'x'", s:run { a = a, b = a, x = a })
  T.fails("invalid argument", "input 'b' is missing", s:run { a = a })
  T.fails("invalid argument", "must have shape [1,1000], got [1,999]", s:run { a = a, b = axle.tensor({ 1, 999 }) })
  T.fails("invalid argument", "must be float32, got int32", s:run { a = a, b = axle.tensor({ 1, 1000 }, "int32") })
  T.fails("not found", "no output 'zz'", s:run({ a = a, b = a }, { "zz" }))
  T.fails("invalid argument", "output 'c' must have shape", s:run({ a = a, b = a }, { c = axle.tensor({ 1, 10 }) }))
  T.fails("invalid argument", "without AXLE_SESSION_PROFILE", s:trace())
  T.fails("invalid argument", "without AXLE_SESSION_PROFILE", s:trace(os.tmpname()))
  -- The same failures from submit, before anything runs.
  T.fails("not found", "no input 'x'", s:submit { a = a, b = a, x = a })
  T.fails("invalid argument", "must have shape", s:submit { a = a, b = axle.tensor({ 2, 1000 }) })
  T.fails("not found", "no output 'zz'", s:submit({ a = a, b = a }, { "zz" }))
  -- And the session still works afterwards.
  T.eq(assert(s:run { a = a, b = a }).c:get(1), 0.0)
end)

T.test("misuse of axle.session raises", function()
  T.raises("bad argument #1", axle.session)
  T.raises("bad argument #1", axle.session, {})
  T.raises("bad argument #2", axle.session, add, "cpu")
  T.raises("unknown option 'device'", axle.session, add, { device = "cpu" })
  T.raises("option 'strict' must be a boolean", axle.session, add, { strict = "yes" })
  T.raises("option 'profile' must be a boolean", axle.session, add, { profile = 1 })
  T.raises("option 'threads' must be an integer", axle.session, add, { threads = -1 })
  T.raises("option 'threads' must be an integer", axle.session, add, { threads = 1.5 })
  T.raises("devices[2] must be a string", axle.session, add, { devices = { "cpu", 3 } })
  T.raises("option 'devices' must be a table", axle.session, add, { devices = 3 })
end)

T.test("misuse of run/submit raises", function()
  local s = assert(axle.session(add))
  local a = axle.tensor({ 1, 1000 })
  T.raises("table expected, got string", s.run, s, "a")
  T.raises("bad argument #1 to 'run'", function() return s:run("a") end)
  T.raises("input 'a' must be an axle.tensor, got table", s.run, s, { a = { 1, 2 }, b = a })
  T.raises("input 'b' must be an axle.tensor, got number", s.run, s, { a = a, b = 1 })
  T.raises("keyed by input name", s.run, s, { a })
  T.raises("output 'c' must be an axle.tensor", s.run, s, { a = a, b = a }, { c = 1 })
  T.raises("output names must be strings", s.run, s, { a = a, b = a }, { 1 })
  T.raises("timeout", s.run, s, { a = a, b = a }, nil, -5)
  T.raises("list of names", s.submit, s, { a = a, b = a }, { c = a })
  T.raises("axle.session expected", s.run, a, { a = a, b = a })
  T.raises("bad argument #2", s.placement, s, "xml")
  local closed = axle.tensor({ 1, 1000 })
  closed:close()
  T.raises("closed axle.tensor", s.run, s, { a = closed, b = a })
end)

T.test("a closed session refuses use", function()
  local s = assert(axle.session(add))
  s:close()
  T.raises("closed axle.session", s.run, s, inputs())
  T.raises("closed axle.session", s.submit, s, inputs())
  T.raises("closed axle.session", s.inputs, s)
  T.raises("closed axle.session", s.placement, s)
  T.ok(tostring(s):find("(closed)", 1, true))
  s:close() -- twice is fine
end)

T.test("a closed event refuses use", function()
  local s = assert(axle.session(add))
  local ev = assert(s:submit(inputs()))
  ev:close()
  for _, m in ipairs({ "wait", "done", "fd", "result", "await", "cancel", "status" }) do
    T.raises("closed axle.event", ev[m], ev)
  end
  T.eq(tostring(ev), "axle.event (closed)")
  ev:close()
end)

T.test("every code is a status name", function()
  local names = {
    ["invalid argument"] = true, ["not found"] = true, ["unsupported"] = true,
    ["out of memory"] = true, ["i/o error"] = true, ["invalid model"] = true,
    ["device error"] = true, ["timeout"] = true, ["cancelled"] = true, ["busy"] = true,
    ["abi mismatch"] = true, ["internal error"] = true, ["pending"] = true,
    ["resource exhausted"] = true,
  }
  local _, _, c1 = axle.session("missing.onnx")
  local _, _, c2 = axle.session(T.model("bad_garbage.onnx"))
  T.ok(names[c1] and names[c2])
end)

T.done()
