-- Watches a folder of images and classifies each new one.
--
--   axle-lua-host watch_folder.lua DIR [options]
--
--   --out FILE        CSV appended to (default: results.csv); rows are
--                     file,label,score with a header when the file is new
--   --model FILE      ONNX model (default: ../digits/digits.onnx beside this
--                     script); one float input, one output of class scores
--   --device NAME     preferred device, repeatable (default: cpu)
--   --ext LIST        extensions to pick up (default: pgm,npy)
--   --once            process what is there now, then exit
--   --interval MS     time between polls (default: 500)
--   --iterations N    polls before exiting (default: 0 = until interrupted)
--
-- "New" means not already in the CSV, so a restart does not repeat work. Each
-- poll's new files are read, submitted together and awaited in host tasks
-- (coroutines the host resumes when a run's fd is readable); rows are written
-- in file-name order once the batch is done. A file that cannot be read is
-- retried on later polls (it may still be being written) and given up after
-- three attempts. Exit status: 0, or 1 if a file failed (or the model did
-- not load).
local axle = require("axle")
local host = require("host")
local images = require("images")

local function usage(msg)
  io.stderr:write("watch_folder: ", msg, "\n",
    "usage: axle-lua-host watch_folder.lua DIR [--out FILE] [--model FILE] [--device NAME]...\n",
    "       [--ext pgm,npy] [--once] [--interval MS] [--iterations N]\n")
  os.exit(2)
end

local script_dir = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local opts = {
  out = "results.csv",
  model = script_dir .. "/../digits/digits.onnx",
  devices = {},
  ext = "pgm,npy",
  interval = 500,
  iterations = 0,
}

do
  local args, i = { ... }, 1
  local function value(flag)
    i = i + 1
    if args[i] == nil then usage(flag .. " needs a value") end
    return args[i]
  end
  while i <= #args do
    local a = args[i]
    if a == "--out" then opts.out = value(a)
    elseif a == "--model" then opts.model = value(a)
    elseif a == "--device" then opts.devices[#opts.devices + 1] = value(a)
    elseif a == "--ext" then opts.ext = value(a)
    elseif a == "--once" then opts.once = true
    elseif a == "--interval" then opts.interval = tonumber(value(a)) or usage("--interval: a number")
    elseif a == "--iterations" then
      opts.iterations = math.tointeger(tonumber(value(a))) or usage("--iterations: an integer")
    elseif a:sub(1, 2) == "--" then usage("unknown option " .. a)
    elseif opts.dir then usage("one folder only")
    else opts.dir = a end
    i = i + 1
  end
  if not opts.dir then usage("no folder given") end
end

local wanted_ext = {}
for e in opts.ext:gmatch("[^,%s]+") do wanted_ext[e:lower()] = true end

local session, err = axle.session(opts.model, { devices = #opts.devices > 0 and opts.devices or nil })
if not session then
  io.stderr:write("watch_folder: ", err, "\n")
  return 1
end
local input = session:inputs()[1]
local output = session:outputs()[1].name

-- RFC 4180: quote a field holding a comma, quote or line break.
local function csv_field(s)
  if s:find('[,"\r\n]') then return '"' .. s:gsub('"', '""') .. '"' end
  return s
end

local function csv_first_field(line)
  if line:sub(1, 1) ~= '"' then return line:match("^([^,]*)") end
  local s, pos = {}, 2
  while pos <= #line do
    local c = line:sub(pos, pos)
    if c == '"' then
      if line:sub(pos + 1, pos + 1) ~= '"' then break end
      pos = pos + 1
    end
    s[#s + 1] = c
    pos = pos + 1
  end
  return table.concat(s)
end

-- Files already in the CSV are done.
local seen, attempts = {}, {}
local existing = io.open(opts.out, "r")
local need_header = true
if existing then
  for line in existing:lines() do
    need_header = false
    local name = csv_first_field(line)
    if name and name ~= "file" then seen[name] = true end
  end
  existing:close()
end

local out = assert(io.open(opts.out, "a"))
if need_header then out:write("file,label,score\n") end
out:flush()

local function argmax(t)
  local best, label = -math.huge, 0
  for i = 1, #t do
    local v = t:get(i)
    if v > best then best, label = v, i - 1 end
  end
  return label, best
end

local failed = false

-- One task per file: read, submit, await (yields to the host until the run
-- completes), then record the label.
local function classify(name, results)
  local path = opts.dir .. "/" .. name
  local tensor, rerr = images.read(path, input.shape, host.readfile)
  if not tensor then
    results[name] = { err = rerr }
    return
  end
  local ev, serr = session:submit({ [input.name] = tensor })
  if not ev then
    results[name] = { err = serr }
    return
  end
  local outputs, werr = ev:await()
  ev:close()
  if not outputs then
    results[name] = { err = werr }
    return
  end
  local label, score = argmax(outputs[output])
  results[name] = { label = label, score = score }
end

local function poll_once()
  local names, lerr = host.listdir(opts.dir)
  if not names then
    io.stderr:write("watch_folder: ", lerr, "\n")
    failed = true
    return
  end
  local batch, results = {}, {}
  for _, name in ipairs(names) do
    local ext = name:match("%.(%w+)$")
    if ext and wanted_ext[ext:lower()] and not seen[name] then
      batch[#batch + 1] = name
      host.spawn(classify, name, results)
    end
  end
  host.run()
  for _, name in ipairs(batch) do
    local r = results[name]
    if r.err then
      attempts[name] = (attempts[name] or 0) + 1
      if opts.once or attempts[name] >= 3 then
        io.stderr:write("watch_folder: ", r.err, "\n")
        seen[name] = true
        failed = true
      end
    else
      out:write(string.format("%s,%d,%.6f\n", csv_field(name), r.label, r.score))
      seen[name] = true
    end
  end
  out:flush()
end

local n = 0
while true do
  poll_once()
  n = n + 1
  if opts.once or (opts.iterations > 0 and n >= opts.iterations) then break end
  host.sleep(opts.interval)
end
out:close()
session:close()
return failed and 1 or 0
