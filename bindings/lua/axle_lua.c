/*
 * Lua 5.4 module "axle": entry point, the per-state runtime, devices and the
 * small utilities (poll, clock) a coroutine scheduler or a benchmark needs.
 *
 * Error convention, everywhere in the module: misuse (wrong argument types,
 * out-of-range indices, closed handles, unknown option names) raises a Lua
 * error; failures reported by the library at run time (missing file, wrong
 * input shape, unsupported op, device errors) return nil, message, code where
 * code is the status name of axle_status_string() ("not found", ...).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axle_lua.h"
#include "axle_lua_internal.h"

#define LAX_RUNTIME_KEY "axle.runtime"

int lax_fail(lua_State* L, axle_status_t st) {
  const char* msg = axle_status_message();
  lua_pushnil(L);
  lua_pushstring(L, msg && *msg ? msg : axle_status_string(st));
  lua_pushstring(L, axle_status_string(st));
  return 3;
}

#define LAX_GC_KEY "axle.gc"
#define LAX_GC_MIN_THRESHOLD ((size_t)64 << 20)

lax_gc* lax_gc_state(lua_State* L) {
  lax_gc* g;
  if (lua_getfield(L, LUA_REGISTRYINDEX, LAX_GC_KEY) == LUA_TUSERDATA) {
    g = (lax_gc*)lua_touserdata(L, -1);
  } else {
    lua_pop(L, 1);
    g = (lax_gc*)lua_newuserdatauv(L, sizeof(*g), 0);
    g->live = g->since = 0;
    g->threshold = LAX_GC_MIN_THRESHOLD;
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, LAX_GC_KEY);
  }
  lua_pop(L, 1);
  return g;
}

void lax_gc_check(lua_State* L, lax_gc* g) {
  if (g->since < g->threshold) return;
  g->since = 0;
  if (!lua_gc(L, LUA_GCISRUNNING)) return; /* the program stopped the collector */
  lua_gc(L, LUA_GCCOLLECT);
  size_t heap = (size_t)lua_gc(L, LUA_GCCOUNT) * 1024;
  size_t t = g->live > heap ? g->live : heap;
  g->threshold = t > LAX_GC_MIN_THRESHOLD ? t : LAX_GC_MIN_THRESHOLD;
}

void lax_runtime_unref(lax_runtime* r) {
  if (r && --r->refs == 0) {
    axle_runtime_release(r->rt);
    free(r);
  }
}

/* The registry holds a box whose finalizer drops the state's reference, so
 * the runtime lives until lua_close() or until the last session after it. */
static int runtime_box_gc(lua_State* L) {
  lax_runtime** box = (lax_runtime**)lua_touserdata(L, 1);
  if (box && *box) {
    lax_runtime_unref(*box);
    *box = NULL;
  }
  return 0;
}

lax_runtime* lax_runtime_get(lua_State* L, axle_status_t* st) {
  *st = AXLE_OK;
  if (lua_getfield(L, LUA_REGISTRYINDEX, LAX_RUNTIME_KEY) == LUA_TUSERDATA) {
    lax_runtime* r = *(lax_runtime**)lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (r) return r;
  } else {
    lua_pop(L, 1);
  }
  /* Box first: if it cannot be allocated Lua raises before we own anything. */
  lax_runtime** box = (lax_runtime**)lua_newuserdatauv(L, sizeof(*box), 0);
  *box = NULL;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, runtime_box_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lax_runtime* r = (lax_runtime*)calloc(1, sizeof(*r));
  if (!r) {
    lua_pop(L, 1);
    *st = AXLE_STATUS_OUT_OF_MEMORY;
    return NULL;
  }
  *st = axle_runtime_create(NULL, &r->rt);
  if (*st != AXLE_OK) {
    free(r);
    lua_pop(L, 1);
    return NULL;
  }
  r->refs = 1;
  *box = r;
  lua_setfield(L, LUA_REGISTRYINDEX, LAX_RUNTIME_KEY);
  return r;
}

static const char* kind_name(axle_device_kind_t k) {
  switch (k) {
    case AXLE_DEVICE_CPU: return "cpu";
    case AXLE_DEVICE_NPU: return "npu";
    case AXLE_DEVICE_DSP: return "dsp";
    case AXLE_DEVICE_FPGA: return "fpga";
    case AXLE_DEVICE_GPU: return "gpu";
    case AXLE_DEVICE_OTHER: break;
  }
  return "other";
}

static void set_str(lua_State* L, const char* key, const char* value) {
  lua_pushstring(L, value ? value : "");
  lua_setfield(L, -2, key);
}

/* axle.devices() -> { {name=, description=, plugin=, kind=, emulated=,
 * memory=, dtypes={...}}, ... } */
static int l_devices(lua_State* L) {
  axle_status_t st;
  lax_runtime* r = lax_runtime_get(L, &st);
  if (!r) return lax_fail(L, st);
  uint32_t n = axle_runtime_device_count(r->rt);
  lua_createtable(L, (int)n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    axle_device_info_t info = {.struct_size = sizeof(info)};
    if ((st = axle_runtime_device_info(r->rt, i, &info)) != AXLE_OK) return lax_fail(L, st);
    lua_createtable(L, 0, 7);
    set_str(L, "name", info.name);
    set_str(L, "description", info.description);
    set_str(L, "plugin", info.plugin);
    set_str(L, "kind", kind_name(info.kind));
    lua_pushboolean(L, info.emulated);
    lua_setfield(L, -2, "emulated");
    lua_pushinteger(L, (lua_Integer)info.memory_bytes);
    lua_setfield(L, -2, "memory");
    lua_newtable(L);
    int k = 0;
    for (int bit = 1; bit < 64; ++bit)
      if (info.dtype_mask & (1ull << bit)) {
        const char* name = axle_dtype_name((axle_dtype_t)bit);
        if (strcmp(name, "undefined") == 0) continue;
        lua_pushstring(L, name);
        lua_rawseti(L, -2, ++k);
      }
    lua_setfield(L, -2, "dtypes");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* Entries of axle.poll's list are fds or events; an event stands for its fd. */
static int entry_fd(lua_State* L, int idx, lua_Integer pos) {
  if (lua_isinteger(L, idx)) {
    lua_Integer fd = lua_tointeger(L, idx);
    if (fd < 0 || fd > 0x7fffffff) luaL_error(L, "axle.poll: entry %I is not a valid fd", pos);
    return (int)fd;
  }
  if (luaL_testudata(L, idx, LAX_EVENT)) return lax_event_fd_at(L, idx);
  luaL_error(L, "axle.poll: entry %I must be an fd or an axle.event, got %s", pos,
             luaL_typename(L, idx));
  return -1;
}

/* axle.poll(list, timeout_ms) -> array of the entries whose fd is readable
 * ({} on timeout). timeout_ms nil or negative waits forever, 0 only checks.
 * It is what a pure-Lua scheduler of ev:await() coroutines blocks in. */
static int l_poll(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer timeout = luaL_optinteger(L, 2, -1);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
  if (n > 65536) return luaL_error(L, "axle.poll: at most 65536 entries");
  if (timeout > 0x7fffffff) timeout = 0x7fffffff;
  if (n == 0) {
    lua_newtable(L);
    return 1;
  }
  /* Userdata, not malloc: if an entry raises, the collector frees it. */
  struct pollfd* fds = (struct pollfd*)lua_newuserdatauv(L, sizeof(struct pollfd) * (size_t)n, 0);
  for (lua_Integer i = 0; i < n; ++i) {
    lua_rawgeti(L, 1, i + 1);
    fds[i].fd = entry_fd(L, lua_gettop(L), i + 1);
    fds[i].events = POLLIN;
    fds[i].revents = 0;
    lua_pop(L, 1);
  }
  int rc;
  do {
    rc = poll(fds, (nfds_t)n, timeout < 0 ? -1 : (int)timeout);
  } while (rc < 0 && errno == EINTR && timeout < 0);
  if (rc < 0 && errno != EINTR) return luaL_error(L, "axle.poll: %s", strerror(errno));
  lua_newtable(L);
  int k = 0;
  for (lua_Integer i = 0; rc > 0 && i < n; ++i)
    if (fds[i].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)) {
      lua_rawgeti(L, 1, i + 1);
      lua_rawseti(L, -2, ++k);
    }
  return 1;
}

/* axle.clock() -> monotonic seconds (nanosecond resolution); Lua's own clocks
 * are CPU time or whole seconds, too coarse to time one run. */
static int l_clock(lua_State* L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

int luaopen_axle(lua_State* L) {
  luaL_checkversion(L);
  lax_tensor_register(L);
  lax_session_register(L);
  static const luaL_Reg funcs[] = {
      {"devices", l_devices}, {"session", lax_session_new}, {"tensor", lax_tensor_new},
      {"poll", l_poll},       {"clock", l_clock},           {NULL, NULL}};
  luaL_newlib(L, funcs);
  lua_pushstring(L, axle_version_string());
  lua_setfield(L, -2, "version");
  lua_pushinteger(L, axle_version_number());
  lua_setfield(L, -2, "version_number");
  return 1;
}
