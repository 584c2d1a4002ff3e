-- Image files as model inputs: binary PGM (P5) and NumPy .npy.
--
--   local images = require("images")
--   local t, err = images.read(path, shape)   -- float32 tensor of `shape`
--
-- The image's element count must equal the shape's (no resizing): an 8x8 PGM
-- fits [1,1,8,8]. PGM pixels are scaled to [0,1] (x/255 for 8-bit images);
-- .npy values are taken as they are (any numeric dtype, cast to float32).
-- Failures return nil and a message, like the axle module's run-time errors.
local axle = require("axle")

local M = {}

local function count(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

local function shape_text(shape)
  return "[" .. table.concat(shape, ",") .. "]"
end

-- P5: "P5" width height maxval, separated by whitespace and # comments, then
-- one whitespace byte and the pixels (1 byte each, 2 big-endian if maxval > 255).
function M.decode_pgm(data, shape, name)
  name = name or "image"
  if data:sub(1, 2) ~= "P5" then return nil, name .. ": not a binary PGM (P5) file" end
  local pos, fields = 3, {}
  while #fields < 3 do
    local s, e = data:find("^%s+", pos)
    if s then pos = e + 1 end
    if data:sub(pos, pos) == "#" then
      local nl = data:find("\n", pos, true)
      if not nl then return nil, name .. ": truncated PGM header" end
      pos = nl + 1
    else
      local digits = data:match("^%d+", pos)
      if not digits then return nil, name .. ": malformed PGM header" end
      fields[#fields + 1] = tonumber(digits)
      pos = pos + #digits
    end
  end
  local w, h, maxval = fields[1], fields[2], fields[3]
  if maxval < 1 or maxval > 65535 then return nil, name .. ": bad PGM maxval " .. maxval end
  if not data:sub(pos, pos):match("%s") then return nil, name .. ": malformed PGM header" end
  pos = pos + 1
  local n, bpp = w * h, maxval > 255 and 2 or 1
  if #data - pos + 1 < n * bpp then
    return nil, string.format("%s: %dx%d PGM is truncated (%d of %d pixel bytes)", name, w, h,
      #data - pos + 1, n * bpp)
  end
  if n ~= count(shape) then
    return nil, string.format("%s: %dx%d image does not fit the input shape %s", name, w, h,
      shape_text(shape))
  end
  local values, scale = {}, 1 / maxval
  if bpp == 1 then
    for i = 1, n do values[i] = data:byte(pos + i - 1) * scale end
  else
    for i = 1, n do
      local hi, lo = data:byte(pos + 2 * i - 2, pos + 2 * i - 1)
      values[i] = (hi * 256 + lo) * scale
    end
  end
  return axle.tensor(shape, "float32", values)
end

local npy_dtypes = {
  f2 = "float16", f4 = "float32", f8 = "float64", u1 = "uint8", i1 = "int8", u2 = "uint16",
  i2 = "int16", u4 = "uint32", i4 = "int32", u8 = "uint64", i8 = "int64", b1 = "bool",
}

-- NumPy format 1.x/2.x/3.x: magic, version, header length, a Python dict
-- literal with descr, fortran_order and shape, then the raw elements.
function M.decode_npy(data, shape, name)
  name = name or "array"
  if data:sub(1, 6) ~= "\147NUMPY" then return nil, name .. ": not a .npy file" end
  local major = data:byte(7)
  local hlen, start
  if major == 1 then
    hlen, start = string.unpack("<I2", data, 9), 11
  elseif major == 2 or major == 3 then
    hlen, start = string.unpack("<I4", data, 9), 13
  else
    return nil, name .. ": unsupported .npy version " .. tostring(major)
  end
  local header = data:sub(start, start + hlen - 1)
  local order, code = header:match("'descr':%s*'([<>|=])(%a%d)'")
  local dtype = code and npy_dtypes[code]
  if not dtype then return nil, name .. ": unsupported .npy dtype in " .. header end
  if order == ">" and code:sub(2) ~= "1" then
    return nil, name .. ": big-endian .npy data is not supported"
  end
  if header:match("'fortran_order':%s*True") then
    return nil, name .. ": Fortran-ordered .npy data is not supported"
  end
  local dims = {}
  for d in (header:match("'shape':%s*(%b())") or ""):gmatch("%d+") do dims[#dims + 1] = tonumber(d) end
  if count(dims) ~= count(shape) then
    return nil, string.format("%s: array of shape %s does not fit the input shape %s", name,
      shape_text(dims), shape_text(shape))
  end
  local body = data:sub(start + hlen)
  local ok, src = pcall(axle.tensor, dims, dtype, body)
  if not ok then return nil, name .. ": " .. tostring(src) end
  if dtype == "float32" then
    -- Already the model's element type: reinterpret the bytes in the new shape.
    return axle.tensor(shape, "float32", src:bytes())
  end
  local values = {}
  for i = 1, #src do
    local v = src:get(i)
    if type(v) == "boolean" then v = v and 1 or 0 end
    values[i] = v
  end
  return axle.tensor(shape, "float32", values)
end

-- Reads a .pgm or .npy file (by extension) into a float32 tensor of shape.
-- readfile defaults to io.open; the lua-host passes host.readfile.
function M.read(path, shape, readfile)
  readfile = readfile or function(p)
    local f, err = io.open(p, "rb")
    if not f then return nil, err end
    local data = f:read("a")
    f:close()
    return data
  end
  local data, err = readfile(path)
  if not data then return nil, err end
  local ext = path:match("%.(%w+)$")
  ext = ext and ext:lower()
  if ext == "pgm" then return M.decode_pgm(data, shape, path) end
  if ext == "npy" then return M.decode_npy(data, shape, path) end
  return nil, path .. ": unknown image type (.pgm and .npy are read)"
end

return M
