-- Run by axle-lua-host itself:
--   axle-lua-host host_watch_folder.lua HOST_BINARY SOURCE_DIR WORK_DIR
-- Checks the host's services (host.*, tasks resumed on event fds) and runs
-- examples/lua-host/watch_folder.lua over the digits samples with --once and
-- in polling mode, checking the CSV it writes.
local host_bin, source, work = ...
assert(host_bin and source and work, "usage: host_watch_folder.lua HOST_BINARY SOURCE_DIR WORK_DIR")
package.path = source .. "/tests/lua/?.lua;" .. package.path
local T = require("testlib")
local axle = require("axle")
local host = require("host")

T.source = source
local samples = source .. "/examples/digits/samples"
local script = source .. "/examples/lua-host/watch_folder.lua"

local function sh(cmd)
  local ok, how, code = os.execute(cmd)
  return ok and 0 or (how == "exit" and code or 128 + code)
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

sh("rm -rf " .. q(work) .. " && mkdir -p " .. q(work))

local function read_csv(path)
  local rows, header = {}, nil
  for line in io.lines(path) do
    if not header then
      header = line
    else
      local file, label, score = line:match("^([^,]+),(%d+),([%d.]+)$")
      assert(file, "malformed row: " .. line)
      rows[#rows + 1] = { file = file, label = tonumber(label), score = tonumber(score) }
    end
  end
  return header, rows
end

local function check_rows(rows, ext, n)
  T.eq(#rows, n, "rows")
  local seen = {}
  for _, r in ipairs(rows) do
    T.ok(r.file:match("%." .. ext .. "$"), r.file)
    T.ok(not seen[r.file], "no duplicate " .. r.file)
    seen[r.file] = true
    T.eq(r.label, tonumber(r.file:match("^(%d)_")), r.file .. " label")
    T.ok(r.score > 0.5 and r.score <= 1.0, r.file .. " score " .. r.score)
  end
end

T.test("host.listdir and host.readfile", function()
  local names = assert(host.listdir(samples))
  T.eq(#names, 20)
  for i = 2, #names do T.ok(names[i - 1] < names[i], "sorted") end
  T.eq(names[1], "0_1206.npy")
  local data = assert(host.readfile(samples .. "/7_634.pgm"))
  T.eq(data:sub(1, 2), "P5")
  T.eq(#data, 75) -- "P5\n8 8\n255\n" and 64 pixels
  local none, msg = host.listdir(work .. "/missing")
  T.eq(none, nil)
  T.ok(msg:find("No such file", 1, true), msg)
  none, msg = host.readfile(work .. "/missing.pgm")
  T.eq(none, nil)
  T.ok(msg:find("missing.pgm", 1, true), msg)
  host.sleep(1)
  host.sleep(0)
end)

T.test("host.spawn/host.run resume tasks when their run completes", function()
  local s = assert(axle.session(source .. "/examples/digits/digits.onnx"))
  local done, order = {}, {}
  for i = 1, 16 do
    host.spawn(function(k)
      local ev = assert(s:submit { image = axle.tensor({ 1, 1, 8, 8 }, "float32", k / 16) })
      local r = assert(ev:await())
      done[k] = #r.scores
      order[#order + 1] = k
    end, i)
  end
  host.run()
  for i = 1, 16 do T.eq(done[i], 10) end
  T.eq(#order, 16)
  -- Plain yields are resumed on the next round.
  local steps = 0
  host.spawn(function()
    for _ = 1, 3 do
      steps = steps + 1
      coroutine.yield()
    end
  end)
  host.run()
  T.eq(steps, 3)
  -- A failing task ends host.run with its error and traceback.
  host.spawn(function()
    coroutine.yield()
    error("task failed on purpose")
  end)
  local ok, err = pcall(host.run)
  T.eq(ok, false)
  T.ok(tostring(err):find("task failed on purpose", 1, true), tostring(err))
  T.ok(tostring(err):find("traceback", 1, true), "with a traceback")
  host.run() -- nothing left
  T.raises("bad argument #1", host.spawn, 42)
end)

T.test("watch_folder --once over the samples: one row per image", function()
  for _, ext in ipairs({ "pgm", "npy" }) do
    local csv = work .. "/once_" .. ext .. ".csv"
    T.eq(sh(string.format("%s %s %s --once --ext %s --out %s", q(host_bin), q(script), q(samples), ext,
      q(csv))), 0, "exit status")
    local header, rows = read_csv(csv)
    T.eq(header, "file,label,score")
    check_rows(rows, ext, 10)
  end
  -- Both kinds by default; again with --once adds nothing (already in the CSV).
  local csv = work .. "/once_all.csv"
  local cmd = string.format("%s %s %s --once --out %s", q(host_bin), q(script), q(samples), q(csv))
  T.eq(sh(cmd), 0)
  T.eq(sh(cmd), 0)
  local _, rows = read_csv(csv)
  T.eq(#rows, 20)
end)

T.test("watch_folder polling picks up new files only", function()
  local dir = work .. "/incoming"
  sh("mkdir -p " .. q(dir))
  local names = assert(host.listdir(samples))
  local pgms = {}
  for _, n in ipairs(names) do
    if n:match("%.pgm$") then pgms[#pgms + 1] = n end
  end
  local function copy(name)
    local f = assert(io.open(dir .. "/" .. name, "wb"))
    f:write(assert(host.readfile(samples .. "/" .. name)))
    f:close()
  end
  local csv = work .. "/poll.csv"
  local cmd = string.format("%s %s %s --iterations 3 --interval 5 --out %s", q(host_bin), q(script),
    q(dir), q(csv))
  for i = 1, 5 do copy(pgms[i]) end
  T.eq(sh(cmd), 0)
  local _, rows = read_csv(csv)
  check_rows(rows, "pgm", 5)
  for i = 6, 10 do copy(pgms[i]) end
  -- Not an image: ignored. A broken image: reported, given up, exit status 1.
  local f = assert(io.open(dir .. "/notes.txt", "w"))
  f:write("hello\n")
  f:close()
  T.eq(sh(cmd), 0)
  _, rows = read_csv(csv)
  check_rows(rows, "pgm", 10)
  f = assert(io.open(dir .. "/broken.pgm", "wb"))
  f:write("P5\n8 8\n255\n" .. string.rep("\0", 10))
  f:close()
  T.eq(sh(cmd .. " 2>" .. q(work .. "/stderr.txt")), 1)
  local err = assert(host.readfile(work .. "/stderr.txt"))
  T.ok(err:find("broken.pgm", 1, true) and err:find("truncated", 1, true), err)
  _, rows = read_csv(csv)
  T.eq(#rows, 10)
end)

T.test("watch_folder reports a bad model and bad options", function()
  T.eq(sh(string.format("%s %s %s --once --model %s --out %s 2>/dev/null", q(host_bin), q(script),
    q(samples), q(work .. "/none.onnx"), q(work .. "/x.csv"))), 1)
  T.eq(sh(string.format("%s %s --bogus 2>/dev/null", q(host_bin), q(script))), 2)
  T.eq(sh(q(host_bin) .. " 2>/dev/null"), 2)
  T.eq(sh(q(host_bin) .. " " .. q(work .. "/no_such_script.lua") .. " 2>/dev/null"), 1)
end)

T.done()
