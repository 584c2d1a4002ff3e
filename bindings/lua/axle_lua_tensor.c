/*
 * axle.tensor: a userdata owning one reference to an axle_tensor_t.
 *
 * Lua indices are 1-based; values cross the boundary as Lua integers for the
 * integer dtypes, numbers for the float ones and booleans for bool. Stores
 * check the value against the dtype's range instead of wrapping, because a
 * silently truncated input is a wrong answer nobody notices.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "axle_kernels_elementwise.h"
#include "axle_lua_internal.h"

static const axle_dtype_t kDtypes[] = {
    AXLE_DTYPE_F32, AXLE_DTYPE_U8,  AXLE_DTYPE_I8,  AXLE_DTYPE_U16, AXLE_DTYPE_I16,
    AXLE_DTYPE_I32, AXLE_DTYPE_I64, AXLE_DTYPE_BOOL, AXLE_DTYPE_F16, AXLE_DTYPE_F64,
    AXLE_DTYPE_U32, AXLE_DTYPE_U64, AXLE_DTYPE_BF16};

axle_dtype_t lax_dtype_check(lua_State* L, int idx) {
  const char* name = luaL_checkstring(L, idx);
  for (size_t i = 0; i < sizeof(kDtypes) / sizeof(kDtypes[0]); ++i)
    if (strcmp(name, axle_dtype_name(kDtypes[i])) == 0) return kDtypes[i];
  luaL_argerror(L, idx,
                lua_pushfstring(L, "unknown dtype '%s' (float32, float64, float16, bfloat16, "
                                   "int8..int64, uint8..uint64, bool)", name));
  return AXLE_DTYPE_UNDEFINED;
}

/* ---- element access ----------------------------------------------------- */

static void push_elem(lua_State* L, axle_dtype_t dt, const void* base, int64_t i) {
  switch (dt) {
    case AXLE_DTYPE_F32: lua_pushnumber(L, ((const float*)base)[i]); break;
    case AXLE_DTYPE_F64: lua_pushnumber(L, ((const double*)base)[i]); break;
    case AXLE_DTYPE_F16:
      lua_pushnumber(L, axle_f32_from_f16(((const uint16_t*)base)[i]));
      break;
    case AXLE_DTYPE_BF16:
      lua_pushnumber(L, axle_f32_from_bf16(((const uint16_t*)base)[i]));
      break;
    case AXLE_DTYPE_U8: lua_pushinteger(L, ((const uint8_t*)base)[i]); break;
    case AXLE_DTYPE_I8: lua_pushinteger(L, ((const int8_t*)base)[i]); break;
    case AXLE_DTYPE_U16: lua_pushinteger(L, ((const uint16_t*)base)[i]); break;
    case AXLE_DTYPE_I16: lua_pushinteger(L, ((const int16_t*)base)[i]); break;
    case AXLE_DTYPE_U32: lua_pushinteger(L, ((const uint32_t*)base)[i]); break;
    case AXLE_DTYPE_I32: lua_pushinteger(L, ((const int32_t*)base)[i]); break;
    case AXLE_DTYPE_I64: lua_pushinteger(L, ((const int64_t*)base)[i]); break;
    case AXLE_DTYPE_U64: {
      uint64_t v = ((const uint64_t*)base)[i];
      /* Lua integers are signed: past INT64_MAX a float keeps the magnitude. */
      if (v > (uint64_t)INT64_MAX) lua_pushnumber(L, (lua_Number)v);
      else lua_pushinteger(L, (lua_Integer)v);
      break;
    }
    case AXLE_DTYPE_BOOL: lua_pushboolean(L, ((const uint8_t*)base)[i] != 0); break;
    default: lua_pushnil(L); break;
  }
}

/* Stores the value at idx into element i; returns NULL or what is wrong with
 * the value (pushed on the stack, so the caller can add where it was). */
static const char* store_elem(lua_State* L, int idx, axle_dtype_t dt, void* base, int64_t i) {
  int t = lua_type(L, idx);
  if (dt == AXLE_DTYPE_BOOL) {
    if (t == LUA_TBOOLEAN) ((uint8_t*)base)[i] = (uint8_t)lua_toboolean(L, idx);
    else if (t == LUA_TNUMBER) ((uint8_t*)base)[i] = lua_tonumber(L, idx) != 0;
    else return lua_pushfstring(L, "boolean expected, got %s", luaL_typename(L, idx));
    return NULL;
  }
  if (t != LUA_TNUMBER) return lua_pushfstring(L, "number expected, got %s", luaL_typename(L, idx));
  switch (dt) {
    case AXLE_DTYPE_F32: ((float*)base)[i] = (float)lua_tonumber(L, idx); return NULL;
    case AXLE_DTYPE_F64: ((double*)base)[i] = (double)lua_tonumber(L, idx); return NULL;
    case AXLE_DTYPE_F16:
      ((uint16_t*)base)[i] = axle_f16_from_f64((double)lua_tonumber(L, idx));
      return NULL;
    case AXLE_DTYPE_BF16:
      ((uint16_t*)base)[i] = axle_bf16_from_f64((double)lua_tonumber(L, idx));
      return NULL;
    default: break;
  }
  int exact;
  lua_Integer v = lua_tointegerx(L, idx, &exact);
  if (!exact)
    return lua_pushfstring(L, "%s has no integer representation for %s",
                           lua_tostring(L, idx), axle_dtype_name(dt));
  lua_Integer lo = 0, hi = 0;
  switch (dt) {
    case AXLE_DTYPE_U8: lo = 0, hi = UINT8_MAX; break;
    case AXLE_DTYPE_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case AXLE_DTYPE_U16: lo = 0, hi = UINT16_MAX; break;
    case AXLE_DTYPE_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case AXLE_DTYPE_U32: lo = 0, hi = UINT32_MAX; break;
    case AXLE_DTYPE_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case AXLE_DTYPE_I64: lo = LUA_MININTEGER, hi = LUA_MAXINTEGER; break;
    case AXLE_DTYPE_U64: lo = 0, hi = LUA_MAXINTEGER; break;
    default: return lua_pushfstring(L, "dtype %s cannot be stored", axle_dtype_name(dt));
  }
  if (v < lo || v > hi)
    return lua_pushfstring(L, "%I is out of range for %s", (lua_Integer)v, axle_dtype_name(dt));
  switch (dt) {
    case AXLE_DTYPE_U8: ((uint8_t*)base)[i] = (uint8_t)v; break;
    case AXLE_DTYPE_I8: ((int8_t*)base)[i] = (int8_t)v; break;
    case AXLE_DTYPE_U16: ((uint16_t*)base)[i] = (uint16_t)v; break;
    case AXLE_DTYPE_I16: ((int16_t*)base)[i] = (int16_t)v; break;
    case AXLE_DTYPE_U32: ((uint32_t*)base)[i] = (uint32_t)v; break;
    case AXLE_DTYPE_I32: ((int32_t*)base)[i] = (int32_t)v; break;
    case AXLE_DTYPE_I64: ((int64_t*)base)[i] = (int64_t)v; break;
    default: ((uint64_t*)base)[i] = (uint64_t)v; break;
  }
  return NULL;
}

/* ---- handles ------------------------------------------------------------ */

lax_tensor* lax_tensor_push_empty(lua_State* L) {
  lax_gc* g = lax_gc_state(L);
  lax_tensor* T = (lax_tensor*)lua_newuserdatauv(L, sizeof(*T), 0);
  T->t = NULL;
  T->gc = g;
  T->bytes = 0;
  luaL_setmetatable(L, LAX_TENSOR);
  return T;
}

void lax_tensor_adopt(lax_tensor* T) {
  T->bytes = axle_tensor_byte_size(T->t);
  T->gc->live += T->bytes;
  T->gc->since += T->bytes;
}

lax_tensor* lax_tensor_test(lua_State* L, int idx) {
  lax_tensor* T = (lax_tensor*)luaL_testudata(L, idx, LAX_TENSOR);
  if (T && !T->t) luaL_error(L, "attempt to use a closed axle.tensor");
  return T;
}

lax_tensor* lax_tensor_check(lua_State* L, int idx) {
  lax_tensor* T = (lax_tensor*)luaL_checkudata(L, idx, LAX_TENSOR);
  if (!T->t) luaL_error(L, "attempt to use a closed axle.tensor");
  return T;
}

static void* host_data(lua_State* L, lax_tensor* T) {
  void* p = axle_tensor_data(T->t);
  if (!p && axle_tensor_byte_size(T->t)) luaL_error(L, "axle.tensor has no host data");
  return p;
}

/* Flat element offset of the indices at [first, first+count) (1-based), or of
 * one flat index when count is 1 and the rank is not. */
static int64_t element_offset(lua_State* L, lax_tensor* T, int first, int count) {
  uint32_t rank = axle_tensor_rank(T->t);
  const int64_t* shape = axle_tensor_shape(T->t);
  if (count == (int)rank) {
    int64_t off = 0;
    for (uint32_t d = 0; d < rank; ++d) {
      lua_Integer i = luaL_checkinteger(L, first + (int)d);
      if (i < 1 || i > shape[d])
        luaL_error(L, "index %I out of range 1..%I in dimension %d", (lua_Integer)i,
                   (lua_Integer)shape[d], (int)d + 1);
      off = off * shape[d] + (i - 1);
    }
    return off;
  }
  if (count == 1) {
    int64_t n = axle_tensor_element_count(T->t);
    lua_Integer i = luaL_checkinteger(L, first);
    if (i < 1 || i > n)
      luaL_error(L, "flat index %I out of range 1..%I", (lua_Integer)i, (lua_Integer)n);
    return i - 1;
  }
  luaL_error(L, "expected %d indices (or one flat index), got %d", (int)rank, count);
  return 0;
}

/* t:get(i, j, ...) */
static int t_get(lua_State* L) {
  lax_tensor* T = lax_tensor_check(L, 1);
  int64_t off = element_offset(L, T, 2, lua_gettop(L) - 1);
  push_elem(L, axle_tensor_dtype(T->t), host_data(L, T), off);
  return 1;
}

/* t:set(i, j, ..., v) */
static int t_set(lua_State* L) {
  lax_tensor* T = lax_tensor_check(L, 1);
  int top = lua_gettop(L);
  if (top < 2) return luaL_error(L, "t:set(indices..., value): value missing");
  int64_t off = element_offset(L, T, 2, top - 2);
  const char* err = store_elem(L, top, axle_tensor_dtype(T->t), host_data(L, T), off);
  if (err) return luaL_error(L, "bad value for t:set: %s", err);
  return 0;
}

static void push_nested(lua_State* L, axle_dtype_t dt, const void* base, const int64_t* shape,
                        uint32_t rank, uint32_t d, int64_t* at) {
  int n = shape[d] > INT32_MAX ? INT32_MAX : (int)shape[d];
  lua_createtable(L, n, 0);
  for (int64_t i = 0; i < shape[d]; ++i) {
    if (d + 1 == rank) push_elem(L, dt, base, (*at)++);
    else push_nested(L, dt, base, shape, rank, d + 1, at);
    lua_rawseti(L, -2, i + 1);
  }
}

/* t:totable() -> nested tables following the shape (the value for rank 0). */
static int t_totable(lua_State* L) {
  lax_tensor* T = lax_tensor_check(L, 1);
  axle_dtype_t dt = axle_tensor_dtype(T->t);
  const void* base = host_data(L, T);
  uint32_t rank = axle_tensor_rank(T->t);
  if (rank == 0) {
    push_elem(L, dt, base, 0);
    return 1;
  }
  luaL_checkstack(L, (int)rank + 4, "tensor rank");
  int64_t at = 0;
  push_nested(L, dt, base, axle_tensor_shape(T->t), rank, 0, &at);
  return 1;
}

/* t:bytes() / t:tostring() -> the raw elements, row-major, host byte order. */
static int t_bytes(lua_State* L) {
  lax_tensor* T = lax_tensor_check(L, 1);
  size_t n = axle_tensor_byte_size(T->t);
  lua_pushlstring(L, n ? (const char*)host_data(L, T) : "", n);
  return 1;
}

static int t_close(lua_State* L) {
  lax_tensor* T = (lax_tensor*)luaL_checkudata(L, 1, LAX_TENSOR);
  if (T->t) T->gc->live -= T->bytes;
  axle_tensor_release(T->t);
  T->t = NULL;
  return 0;
}

static int t_len(lua_State* L) {
  lax_tensor* T = lax_tensor_check(L, 1);
  lua_pushinteger(L, axle_tensor_element_count(T->t));
  return 1;
}

static void push_shape(lua_State* L, axle_tensor_t* t) {
  uint32_t rank = axle_tensor_rank(t);
  const int64_t* shape = axle_tensor_shape(t);
  lua_createtable(L, (int)rank, 0);
  for (uint32_t d = 0; d < rank; ++d) {
    lua_pushinteger(L, shape[d]);
    lua_rawseti(L, -2, (lua_Integer)d + 1);
  }
}

static int t_tostring(lua_State* L) {
  lax_tensor* T = (lax_tensor*)luaL_checkudata(L, 1, LAX_TENSOR);
  if (!T->t) {
    lua_pushstring(L, "axle.tensor (closed)");
    return 1;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  axle_dtype_t dt = axle_tensor_dtype(T->t);
  uint32_t rank = axle_tensor_rank(T->t);
  const int64_t* shape = axle_tensor_shape(T->t);
  char tmp[64];
  snprintf(tmp, sizeof tmp, "axle.tensor(%s [", axle_dtype_name(dt));
  luaL_addstring(&b, tmp);
  for (uint32_t d = 0; d < rank; ++d) {
    snprintf(tmp, sizeof tmp, "%s%lld", d ? "," : "", (long long)shape[d]);
    luaL_addstring(&b, tmp);
  }
  luaL_addstring(&b, "]");
  int64_t n = axle_tensor_element_count(T->t);
  const void* base = axle_tensor_data(T->t);
  /* A preview is what one wants at a REPL; the whole tensor is totable()'s job. */
  for (int64_t i = 0; base && i < n && i < 8; ++i) {
    luaL_addstring(&b, i ? " " : ": ");
    push_elem(L, dt, base, i);
    if (lua_isinteger(L, -1))
      snprintf(tmp, sizeof tmp, "%lld", (long long)lua_tointeger(L, -1));
    else if (lua_type(L, -1) == LUA_TNUMBER)
      snprintf(tmp, sizeof tmp, "%.6g", (double)lua_tonumber(L, -1));
    else
      snprintf(tmp, sizeof tmp, "%s", lua_toboolean(L, -1) ? "true" : "false");
    lua_pop(L, 1);
    luaL_addstring(&b, tmp);
  }
  if (n > 8) luaL_addstring(&b, " ...");
  luaL_addstring(&b, ")");
  luaL_pushresult(&b);
  return 1;
}

static int t_index(lua_State* L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1; /* a method */
    lua_pop(L, 1);
    lax_tensor* T = lax_tensor_check(L, 1);
    const char* k = lua_tostring(L, 2);
    if (strcmp(k, "shape") == 0) push_shape(L, T->t);
    else if (strcmp(k, "dtype") == 0) lua_pushstring(L, axle_dtype_name(axle_tensor_dtype(T->t)));
    else if (strcmp(k, "rank") == 0) lua_pushinteger(L, axle_tensor_rank(T->t));
    else if (strcmp(k, "size") == 0) lua_pushinteger(L, axle_tensor_element_count(T->t));
    else if (strcmp(k, "nbytes") == 0) lua_pushinteger(L, (lua_Integer)axle_tensor_byte_size(T->t));
    else lua_pushnil(L);
    return 1;
  }
  /* t[i] would read as an element but is ambiguous for rank > 1. */
  return luaL_error(L, "axle.tensor cannot be indexed with a %s; use t:get(...)",
                    luaL_typename(L, 2));
}

static int t_newindex(lua_State* L) {
  return luaL_error(L, "axle.tensor fields are read-only; use t:set(..., value)");
}

/* ---- construction ------------------------------------------------------- */

typedef struct fill_ctx {
  axle_dtype_t dt;
  void* base;
  const int64_t* shape;
  uint32_t rank;
  int64_t at;
  char path[AXLE_MAX_RANK * 24];
} fill_ctx;

static void fill_nested(lua_State* L, int tbl, fill_ctx* c, uint32_t d) {
  size_t plen = strlen(c->path);
  lua_Integer len = (lua_Integer)lua_rawlen(L, tbl);
  if (len != c->shape[d])
    luaL_error(L, "bad data for axle.tensor: data%s has %I entries, dimension %d is %I", c->path,
               (lua_Integer)len, (int)d + 1, (lua_Integer)c->shape[d]);
  for (lua_Integer i = 1; i <= len; ++i) {
    snprintf(c->path + plen, sizeof(c->path) - plen, "[%lld]", (long long)i);
    lua_rawgeti(L, tbl, i);
    if (d + 1 == c->rank) {
      const char* err = store_elem(L, -1, c->dt, c->base, c->at++);
      if (err) luaL_error(L, "bad data for axle.tensor: data%s: %s", c->path, err);
    } else {
      if (!lua_istable(L, -1))
        luaL_error(L, "bad data for axle.tensor: data%s must be a table (rank %d), got %s", c->path,
                   (int)c->rank, luaL_typename(L, -1));
      fill_nested(L, lua_gettop(L), c, d + 1);
    }
    lua_pop(L, 1);
  }
  c->path[plen] = '\0';
}

/* axle.tensor(shape [, dtype [, data]]): data is nil (zeros), a number (every
 * element), a flat or nested table, or a binary string of exactly the
 * tensor's bytes (host byte order). */
int lax_tensor_new(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  axle_dtype_t dt = lua_isnoneornil(L, 2) ? AXLE_DTYPE_F32 : lax_dtype_check(L, 2);
  lua_Integer rank = (lua_Integer)lua_rawlen(L, 1);
  if (rank > AXLE_MAX_RANK)
    return luaL_error(L, "axle.tensor: rank %I exceeds %d", rank, AXLE_MAX_RANK);
  int64_t shape[AXLE_MAX_RANK];
  for (lua_Integer d = 0; d < rank; ++d) {
    lua_rawgeti(L, 1, d + 1);
    int exact;
    lua_Integer v = lua_tointegerx(L, -1, &exact);
    if (!exact || lua_type(L, -1) != LUA_TNUMBER || v < 0)
      return luaL_error(L, "axle.tensor: shape[%I] must be a non-negative integer", d + 1);
    shape[d] = v;
    lua_pop(L, 1);
  }
  int data_type = lua_type(L, 3);
  if (data_type != LUA_TNONE && data_type != LUA_TNIL && data_type != LUA_TNUMBER &&
      data_type != LUA_TTABLE && data_type != LUA_TSTRING && data_type != LUA_TBOOLEAN)
    return luaL_argerror(L, 3, "table, string or number expected");

  /* The userdata exists before the tensor so any later raise frees it. */
  lax_tensor* T = lax_tensor_push_empty(L);
  int ud = lua_gettop(L);
  axle_status_t st = axle_tensor_create(dt, (uint32_t)rank, shape, &T->t);
  if (st != AXLE_OK) return lax_fail(L, st);
  lax_tensor_adopt(T);
  int64_t n = axle_tensor_element_count(T->t);
  size_t bytes = axle_tensor_byte_size(T->t);
  void* base = bytes ? host_data(L, T) : NULL;

  if (data_type == LUA_TSTRING) {
    size_t len;
    const char* s = lua_tolstring(L, 3, &len);
    if (len != bytes)
      return luaL_error(L, "axle.tensor: the data string has %I bytes, the %s tensor needs %I",
                        (lua_Integer)len, axle_dtype_name(dt), (lua_Integer)bytes);
    if (bytes) memcpy(base, s, bytes);
  } else if (data_type == LUA_TNUMBER || data_type == LUA_TBOOLEAN) {
    for (int64_t i = 0; i < n; ++i) {
      const char* err = store_elem(L, 3, dt, base, i);
      if (err) return luaL_error(L, "bad data for axle.tensor: %s", err);
    }
  } else if (data_type == LUA_TTABLE) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, 3);
    /* Flat unless the first entry is itself a table. */
    int flat = rank <= 1 || len == 0 || lua_rawgeti(L, 3, 1) != LUA_TTABLE;
    lua_settop(L, ud);
    if (flat) {
      if (len != n)
        return luaL_error(L, "bad data for axle.tensor: %I values for %I elements",
                          (lua_Integer)len, (lua_Integer)n);
      for (int64_t i = 0; i < n; ++i) {
        lua_rawgeti(L, 3, i + 1);
        const char* err = store_elem(L, -1, dt, base, i);
        if (err)
          return luaL_error(L, "bad data for axle.tensor: data[%I]: %s", (lua_Integer)i + 1, err);
        lua_settop(L, ud);
      }
    } else {
      fill_ctx c = {.dt = dt, .base = base, .shape = shape, .rank = (uint32_t)rank, .at = 0};
      c.path[0] = '\0';
      luaL_checkstack(L, 2 * (int)rank + 4, "tensor rank");
      fill_nested(L, 3, &c, 0);
    }
  }
  lua_settop(L, ud);
  lax_gc_check(L, T->gc);
  return 1;
}

void lax_tensor_register(lua_State* L) {
  static const luaL_Reg methods[] = {{"get", t_get},       {"set", t_set},
                                     {"totable", t_totable}, {"bytes", t_bytes},
                                     {"tostring", t_bytes}, {"close", t_close},
                                     {NULL, NULL}};
  static const luaL_Reg meta[] = {{"__gc", t_close},         {"__close", t_close},
                                  {"__len", t_len},          {"__tostring", t_tostring},
                                  {"__newindex", t_newindex}, {NULL, NULL}};
  if (!luaL_newmetatable(L, LAX_TENSOR)) {
    lua_pop(L, 1);
    return;
  }
  luaL_setfuncs(L, meta, 0);
  luaL_newlib(L, methods);
  lua_pushcclosure(L, t_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushliteral(L, LAX_TENSOR);
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
}
