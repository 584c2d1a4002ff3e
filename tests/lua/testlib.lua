-- Minimal TAP-style harness for the Lua tests (no dependency beyond lua5.4).
--
--   local T = require("testlib")
--   T.test("name", function() T.eq(1 + 1, 2) end)
--   T.done()      -- exits 1 if any test failed
local T = {}

local passed, failed = 0, 0

local function fmt(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

function T.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passed = passed + 1
    print("ok - " .. name)
  else
    failed = failed + 1
    print("not ok - " .. name)
    print("  " .. tostring(err):gsub("\n", "\n  "))
  end
end

function T.ok(v, msg)
  if not v then error(msg or "expected a true value", 2) end
  return v
end

function T.eq(got, want, msg)
  if got ~= want then
    error(string.format("%sexpected %s, got %s", msg and (msg .. ": ") or "", fmt(want), fmt(got)), 2)
  end
end

function T.near(got, want, tol, msg)
  if type(got) ~= "number" or math.abs(got - want) > tol then
    error(string.format("%sexpected %s +- %g, got %s", msg and (msg .. ": ") or "", fmt(want), tol,
      fmt(got)), 2)
  end
end

-- Deep equality of plain tables and values.
function T.same(got, want, msg, path)
  path = path or ""
  if type(got) ~= type(want) then
    error(string.format("%s%s: expected %s, got %s", msg and (msg .. ": ") or "", path, fmt(want),
      fmt(got)), 2)
  end
  if type(want) ~= "table" then
    if got ~= want then
      error(string.format("%s%s: expected %s, got %s", msg and (msg .. ": ") or "", path, fmt(want),
        fmt(got)), 2)
    end
    return
  end
  for k, v in pairs(want) do T.same(got[k], v, msg, path .. "[" .. fmt(k) .. "]") end
  for k in pairs(got) do
    if want[k] == nil then error(string.format("%s%s: unexpected key %s", msg or "", path, fmt(k)), 2) end
  end
end

-- fn(...) must raise an error whose message contains pattern (plain text).
function T.raises(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then error("expected an error matching '" .. pattern .. "', got none", 2) end
  if not tostring(err):find(pattern, 1, true) then
    error(string.format("expected an error containing '%s', got: %s", pattern, tostring(err)), 2)
  end
  return err
end

-- A run-time failure: nil, message, code. Returns the message.
function T.fails(code, pattern, v, msg, got_code, ...)
  if v ~= nil then error("expected nil, msg, code; got " .. fmt(v), 2) end
  if type(msg) ~= "string" or msg == "" then error("expected a message, got " .. fmt(msg), 2) end
  if got_code ~= code then
    error(string.format("expected code %s, got %s (%s)", fmt(code), fmt(got_code), msg), 2)
  end
  if pattern and not msg:find(pattern, 1, true) then
    error(string.format("expected a message containing '%s', got: %s", pattern, msg), 2)
  end
  if select("#", ...) ~= 0 then error("more than three values returned", 2) end
  return msg
end

T.source = os.getenv("AXLE_SOURCE_DIR") or "."

function T.model(name)
  return T.source .. "/tests/models/" .. name
end

T.samples = T.source .. "/examples/digits/samples"

-- File names in a directory (POSIX ls; the stock interpreter has no listdir).
function T.listdir(dir)
  local p = assert(io.popen('ls -1 "' .. dir .. '"'))
  local names = {}
  for line in p:lines() do names[#names + 1] = line end
  p:close()
  return names
end

function T.readfile(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("a")
  f:close()
  return data
end

-- Rounds a Lua number to float32, as a tensor stores it.
function T.f32(x)
  return (string.unpack("<f", string.pack("<f", x)))
end

-- Resident set size in bytes (Linux).
function T.rss()
  local f = io.open("/proc/self/statm", "r")
  if not f then return nil end
  local _, resident = f:read("n", "n")
  f:close()
  return resident * 4096
end

-- True under AddressSanitizer (LD_PRELOADed runtime): RSS is then dominated
-- by ASan's quarantine and says nothing about leaks.
T.asan = (os.getenv("LD_PRELOAD") or ""):find("asan", 1, true) ~= nil

function T.done()
  print(string.format("# %d passed, %d failed", passed, failed))
  -- close = true: lua_close() runs every finalizer, which is part of the test.
  os.exit(failed == 0 and 0 or 1, true)
end

return T
