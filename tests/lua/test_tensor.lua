-- axle.tensor: construction, indexing, conversion, misuse.
local T = require("testlib")
local axle = require("axle")

T.test("zeros, fields and length", function()
  local t = axle.tensor({ 2, 3 })
  T.eq(t.dtype, "float32")
  T.same(t.shape, { 2, 3 })
  T.eq(t.rank, 2)
  T.eq(t.size, 6)
  T.eq(t.nbytes, 24)
  T.eq(#t, 6)
  for i = 1, 2 do
    for j = 1, 3 do T.eq(t:get(i, j), 0.0) end
  end
  T.eq(t.nosuchfield, nil)
  T.ok(tostring(t):find("axle.tensor(float32 [2,3]", 1, true), tostring(t))
end)

T.test("tostring previews at most 8 values", function()
  T.eq(tostring(axle.tensor({ 3 }, "bool", { true, false, true })), "axle.tensor(bool [3]: true false true)")
  T.eq(tostring(axle.tensor({ 2 }, "int32", { 1, -2 })), "axle.tensor(int32 [2]: 1 -2)")
  T.eq(tostring(axle.tensor({ 1, 2 }, "float32", { { 0.5, 0.1 } })), "axle.tensor(float32 [1,2]: 0.5 0.1)")
  T.eq(tostring(axle.tensor({ 10 }, "uint8", 7)), "axle.tensor(uint8 [10]: 7 7 7 7 7 7 7 7 ...)")
  T.eq(tostring(axle.tensor({}, "float64", 2)), "axle.tensor(float64 []: 2)")
  T.eq(tostring(axle.tensor({ 0 })), "axle.tensor(float32 [0])")
end)

T.test("flat and nested data agree; get is 1-based and row-major", function()
  local flat = axle.tensor({ 2, 3 }, "int32", { 1, 2, 3, 4, 5, 6 })
  local nested = axle.tensor({ 2, 3 }, "int32", { { 1, 2, 3 }, { 4, 5, 6 } })
  T.same(flat:totable(), { { 1, 2, 3 }, { 4, 5, 6 } })
  T.same(nested:totable(), flat:totable())
  T.eq(flat:get(1, 1), 1)
  T.eq(flat:get(1, 3), 3)
  T.eq(flat:get(2, 1), 4)
  T.eq(flat:get(2, 3), 6)
  T.eq(flat:get(5), 5, "one flat index")
  T.eq(math.type(flat:get(1, 1)), "integer")
  T.eq(flat:bytes(), nested:bytes())
end)

T.test("set then get, totable of rank 3", function()
  local t = axle.tensor({ 2, 2, 2 }, "float64")
  local v = 0
  for i = 1, 2 do
    for j = 1, 2 do
      for k = 1, 2 do
        v = v + 0.5
        t:set(i, j, k, v)
      end
    end
  end
  T.same(t:totable(), { { { 0.5, 1.0 }, { 1.5, 2.0 } }, { { 2.5, 3.0 }, { 3.5, 4.0 } } })
  t:set(8, -1) -- flat index
  T.eq(t:get(2, 2, 2), -1.0)
end)

T.test("rank 0, rank 1 and empty tensors", function()
  local s = axle.tensor({}, "int64", { 42 })
  T.eq(#s, 1)
  T.eq(s:get(), 42)
  T.eq(s:totable(), 42)
  s:set(7)
  T.eq(s:get(), 7)
  local scalar = axle.tensor({}, "float32", 2.5)
  T.eq(scalar:get(), 2.5)
  local v = axle.tensor({ 4 }, "uint8", { 1, 2, 3, 255 })
  T.same(v:totable(), { 1, 2, 3, 255 })
  local e = axle.tensor({ 0, 3 })
  T.eq(#e, 0)
  T.same(e:totable(), {})
  T.eq(e:bytes(), "")
  T.same(e.shape, { 0, 3 })
end)

T.test("a number fills every element", function()
  local t = axle.tensor({ 3, 2 }, "int16", -5)
  for i = 1, #t do T.eq(t:get(i), -5) end
  local b = axle.tensor({ 3 }, "bool", true)
  T.same(b:totable(), { true, true, true })
end)

T.test("every dtype round-trips its values", function()
  local cases = {
    { "float32", { 1.5, -2.25, 0, 2 ^ 100 } },
    { "float64", { 0.1, -1e300, 5e-324, 2 ^ 53 } },
    { "float16", { 1.5, -2.0, 65504.0, 2 ^ -14 } },
    { "bfloat16", { 1.0, -3.140625, 256.0, 0.0 } },
    { "int8", { -128, 127, 0, -1 } },
    { "uint8", { 0, 255, 17, 128 } },
    { "int16", { -32768, 32767, 1, -1 } },
    { "uint16", { 0, 65535, 256, 1 } },
    { "int32", { -2147483648, 2147483647, 0, 7 } },
    { "uint32", { 0, 4294967295, 1, 65536 } },
    { "int64", { math.mininteger, math.maxinteger, 0, -1 } },
    { "uint64", { 0, math.maxinteger, 1, 2 ^ 40 // 1 } },
    { "bool", { true, false, false, true } },
  }
  for _, c in ipairs(cases) do
    local dtype, values = c[1], c[2]
    local t = axle.tensor({ 4 }, dtype, values)
    T.eq(t.dtype, dtype)
    for i = 1, 4 do T.eq(t:get(i), values[i], dtype .. " element " .. i) end
    local u = axle.tensor({ 2, 2 }, dtype, t:bytes())
    T.eq(u:bytes(), t:bytes(), dtype .. " bytes")
  end
end)

T.test("float32 stores round to float32; float16/bfloat16 round to nearest even", function()
  local t = axle.tensor({ 1 }, "float32", { 0.1 })
  T.eq(t:get(1), T.f32(0.1))
  T.ok(t:get(1) ~= 0.1)
  local h = axle.tensor({ 4 }, "float16", { 1 + 2 ^ -11, 1 + 3 * 2 ^ -11, 70000, 2 ^ -25 })
  T.eq(h:get(1), 1.0, "tie rounds to even (down)")
  T.eq(h:get(2), 1 + 2 ^ -9, "tie rounds to even (up)")
  T.eq(h:get(3), math.huge, "overflow is inf")
  T.eq(h:get(4), 0.0, "below half the smallest subnormal")
  local sub = axle.tensor({ 1 }, "float16", { 2 ^ -24 })
  T.eq(sub:get(1), 2 ^ -24, "smallest subnormal")
  local bf = axle.tensor({ 1 }, "bfloat16", { 1 + 2 ^ -8 })
  T.eq(bf:get(1), 1.0, "bfloat16 tie to even")
  local nan = axle.tensor({ 1 }, "float16", { 0 / 0 })
  T.ok(nan:get(1) ~= nan:get(1), "NaN stays NaN")
  -- A Lua number is a double, rounded once: through float32 first, these
  -- would land on the ties and round down to 1.
  local once = axle.tensor({ 1 }, "float16", { 1 + 2 ^ -11 + 2 ^ -40 })
  T.eq(once:get(1), 1 + 2 ^ -10, "float16 from a double just above a tie")
  local bf_once = axle.tensor({ 1 }, "bfloat16", { 1 + 2 ^ -8 + 2 ^ -40 })
  T.eq(bf_once:get(1), 1 + 2 ^ -7, "bfloat16 from a double just above a tie")
end)

T.test("binary strings: bytes/tostring and back", function()
  local s = string.pack("<ffff", 1.0, -2.5, 3.25, 1e-3)
  local t = axle.tensor({ 2, 2 }, "float32", s)
  T.eq(t:get(1, 1), 1.0)
  T.eq(t:get(1, 2), -2.5)
  T.eq(t:get(2, 1), 3.25)
  T.eq(t:get(2, 2), T.f32(1e-3))
  T.eq(t:bytes(), s)
  T.eq(t:tostring(), s)
  T.eq(#t:bytes(), t.nbytes)
  local big = axle.tensor({ 1 }, "uint64", string.pack("<I8", -1))
  T.eq(big:get(1), 18446744073709551615.0, "uint64 past maxinteger reads as a float")
  local i64 = axle.tensor({ 2 }, "int64", string.pack("<i8i8", math.mininteger, 12345))
  T.same(i64:totable(), { math.mininteger, 12345 })
end)

T.test("out-of-range values raise instead of wrapping", function()
  T.raises("out of range for uint8", axle.tensor, { 1 }, "uint8", { 256 })
  T.raises("out of range for int8", axle.tensor, { 1 }, "int8", { -129 })
  T.raises("out of range for uint64", axle.tensor, { 1 }, "uint64", { -1 })
  T.raises("no integer representation", axle.tensor, { 1 }, "int32", { 1.5 })
  T.raises("number expected", axle.tensor, { 1 }, "float32", { "1" })
  T.raises("boolean expected", axle.tensor, { 1 }, "bool", { "yes" })
  local t = axle.tensor({ 2 }, "uint16")
  T.raises("out of range for uint16", t.set, t, 1, 65536)
  T.raises("number expected", t.set, t, 1, nil)
  T.raises("data[2][1]", axle.tensor, { 2, 2 }, "int8", { { 1, 2 }, { 300, 4 } })
end)

T.test("misuse raises", function()
  local t = axle.tensor({ 2, 3 })
  T.raises("index 3 out of range 1..2 in dimension 1", t.get, t, 3, 1)
  T.raises("index 0 out of range 1..3 in dimension 2", t.get, t, 1, 0)
  T.raises("flat index 7 out of range 1..6", t.get, t, 7)
  T.raises("expected 2 indices", t.get, t, 1, 1, 1)
  T.raises("expected 2 indices", t.get, t)
  T.raises("number has no integer representation", t.get, t, 1.5, 1)
  T.raises("value missing", t.set, t)
  T.raises("values for 6 elements", axle.tensor, { 2, 3 }, "float32", { 1, 2, 3 })
  T.raises("has 3 entries, dimension 2 is 2", axle.tensor, { 3, 2 }, "float32", { { 1, 2 }, { 3, 4, 5 }, { 6 } })
  T.raises("must be a table", axle.tensor, { 2, 2, 1 }, "float32", { { 1, 2 }, { 3, 4 } })
  T.raises("unknown dtype 'float'", axle.tensor, { 1 }, "float")
  T.raises("the data string has 3 bytes", axle.tensor, { 1 }, "float32", "abc")
  T.raises("shape[1] must be a non-negative integer", axle.tensor, { -1 })
  T.raises("shape[2] must be a non-negative integer", axle.tensor, { 1, 2.5 })
  T.raises("rank 9 exceeds 8", axle.tensor, { 1, 1, 1, 1, 1, 1, 1, 1, 1 })
  T.raises("table expected", axle.tensor, 3)
  T.raises("table, string or number expected", axle.tensor, { 1 }, "float32", print)
  T.raises("use t:get", function() return t[1] end)
  T.raises("read-only", function() t.shape = { 6 } end)
  T.raises("axle.tensor expected", t.get, {}, 1)
end)

T.test("a closed tensor refuses use; closing twice is harmless", function()
  local t = axle.tensor({ 2 }, "float32", { 1, 2 })
  t:close()
  T.raises("closed axle.tensor", t.get, t, 1)
  T.raises("closed axle.tensor", function() return #t end)
  T.raises("closed axle.tensor", function() return t.shape end)
  T.raises("closed axle.tensor", t.totable, t)
  T.eq(tostring(t), "axle.tensor (closed)")
  t:close()
end)

T.test("large tensors convert both ways", function()
  local n = 100000
  local values = {}
  for i = 1, n do values[i] = (i % 251) - 125 end
  local t = axle.tensor({ n }, "int32", values)
  local back = t:totable()
  T.eq(#back, n)
  for i = 1, n, 997 do T.eq(back[i], values[i]) end
  local copy = axle.tensor({ 100, 1000 }, "int32", t:bytes())
  T.eq(copy:get(100, 1000), values[n])
end)

T.done()
