/*
 * axle.session and axle.event.
 *
 * Every C object is owned by a userdata that exists before the object does,
 * so a Lua error raised half-way through a call (a bad argument, memory
 * exhaustion) leaves nothing behind that the collector cannot free.
 */
#include <string.h>

#include "axle_lua_internal.h"

typedef struct lax_session {
  axle_session_t* s; /* NULL once closed */
  lax_runtime* rt;
} lax_session;

typedef struct lax_event {
  axle_event_t* e; /* NULL once closed */
} lax_event;

/* Uservalues of an event userdata. */
enum { EV_NAMES = 1, EV_RESULT = 2 };

static lax_session* check_session(lua_State* L, int idx) {
  lax_session* S = (lax_session*)luaL_checkudata(L, idx, LAX_SESSION);
  if (!S->s) luaL_error(L, "attempt to use a closed axle.session");
  return S;
}

static lax_event* check_event(lua_State* L, int idx) {
  lax_event* E = (lax_event*)luaL_checkudata(L, idx, LAX_EVENT);
  if (!E->e) luaL_error(L, "attempt to use a closed axle.event");
  return E;
}

int lax_event_fd_at(lua_State* L, int idx) {
  lax_event* E = check_event(L, idx);
  int fd = -1;
  axle_event_fd(E->e, &fd);
  return fd;
}

/* ---- axle.session(path, options) ---------------------------------------- */

static int opt_bool(lua_State* L, int idx, const char* key) {
  if (!lua_isboolean(L, idx))
    luaL_error(L, "axle.session: option '%s' must be a boolean, got %s", key,
               luaL_typename(L, idx));
  return lua_toboolean(L, idx);
}

/* Reads the options table at idx into o; device names are borrowed from the
 * table (alive for the call) through a userdata array pushed on the stack. */
static void read_options(lua_State* L, int idx, axle_session_options_t* o) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "axle.session: option names must be strings, got %s", luaL_typename(L, -2));
    const char* key = lua_tostring(L, -2);
    int v = lua_gettop(L);
    if (strcmp(key, "devices") == 0) {
      if (lua_isstring(L, v) && !lua_isnumber(L, v)) {
        /* One name alone: devices = "ref" reads as devices = {"ref"}. */
        const char** names = (const char**)lua_newuserdatauv(L, sizeof(char*), 0);
        names[0] = lua_tostring(L, v);
        o->devices = names;
        o->device_count = 1;
      } else {
        if (!lua_istable(L, v))
          luaL_error(L, "axle.session: option 'devices' must be a table of names, got %s",
                     luaL_typename(L, v));
        lua_Integer n = (lua_Integer)lua_rawlen(L, v);
        if (n > 1024) luaL_error(L, "axle.session: too many devices");
        const char** names = (const char**)lua_newuserdatauv(L, sizeof(char*) * (size_t)(n + 1), 0);
        for (lua_Integer i = 1; i <= n; ++i) {
          if (lua_rawgeti(L, v, i) != LUA_TSTRING)
            luaL_error(L, "axle.session: devices[%I] must be a string, got %s", i,
                       luaL_typename(L, -1));
          names[i - 1] = lua_tostring(L, -1); /* the devices table keeps it alive */
          lua_pop(L, 1);
        }
        o->devices = n ? names : NULL;
        o->device_count = (uint32_t)n;
      }
      /* Anchor the array below the iteration key until the call ends. */
      lua_insert(L, idx + 1);
      ++v;
    } else if (strcmp(key, "strict") == 0) {
      if (opt_bool(L, v, key)) o->flags |= AXLE_SESSION_STRICT;
    } else if (strcmp(key, "profile") == 0) {
      if (opt_bool(L, v, key)) o->flags |= AXLE_SESSION_PROFILE;
    } else if (strcmp(key, "threads") == 0) {
      int exact;
      lua_Integer n = lua_tointegerx(L, v, &exact);
      if (!exact || lua_type(L, v) != LUA_TNUMBER || n < 0 || n > 4096)
        luaL_error(L, "axle.session: option 'threads' must be an integer 0..4096 (0 = default)");
      o->threads = (uint32_t)n;
    } else {
      luaL_error(L, "axle.session: unknown option '%s' (devices, strict, threads, profile)", key);
    }
    lua_settop(L, v - 1); /* keep the key for lua_next */
  }
}

int lax_session_new(lua_State* L) {
  const char* path = luaL_checkstring(L, 1);
  axle_session_options_t o = {.struct_size = sizeof(o)};
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    read_options(L, 2, &o);
  }
  lax_session* S = (lax_session*)lua_newuserdatauv(L, sizeof(*S), 1);
  S->s = NULL;
  S->rt = NULL;
  luaL_setmetatable(L, LAX_SESSION);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1); /* the path, for s.path and tostring(s) */

  axle_status_t st;
  lax_runtime* r = lax_runtime_get(L, &st);
  if (!r) return lax_fail(L, st);
  axle_model_t* model = NULL;
  if ((st = axle_model_load_file(path, &model)) != AXLE_OK) return lax_fail(L, st);
  st = axle_session_create(r->rt, model, &o, &S->s);
  if (st != AXLE_OK) {
    int n = lax_fail(L, st); /* before the release: the message is the thread's last */
    axle_model_release(model);
    return n;
  }
  axle_model_release(model); /* the session holds its own reference */
  S->rt = r;
  ++r->refs;
  return 1;
}

static int s_close(lua_State* L) {
  lax_session* S = (lax_session*)luaL_checkudata(L, 1, LAX_SESSION);
  if (S->s) {
    axle_session_release(S->s); /* waits for its pending submissions */
    S->s = NULL;
  }
  lax_runtime_unref(S->rt);
  S->rt = NULL;
  return 0;
}

static void push_info(lua_State* L, const axle_tensor_info_t* info) {
  lua_createtable(L, 0, 3);
  lua_pushstring(L, info->name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, axle_dtype_name(info->dtype));
  lua_setfield(L, -2, "dtype");
  lua_createtable(L, (int)info->rank, 0);
  for (uint32_t d = 0; d < info->rank && d < AXLE_MAX_RANK; ++d) {
    lua_pushinteger(L, info->shape[d]);
    lua_rawseti(L, -2, (lua_Integer)d + 1);
  }
  lua_setfield(L, -2, "shape");
}

static int push_infos(lua_State* L, int outputs) {
  lax_session* S = check_session(L, 1);
  uint32_t n = outputs ? axle_session_output_count(S->s) : axle_session_input_count(S->s);
  lua_createtable(L, (int)n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    axle_tensor_info_t info = {.struct_size = sizeof(info)};
    axle_status_t st = outputs ? axle_session_output_info(S->s, i, &info)
                               : axle_session_input_info(S->s, i, &info);
    if (st != AXLE_OK) return lax_fail(L, st);
    push_info(L, &info);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static int s_inputs(lua_State* L) { return push_infos(L, 0); }
static int s_outputs(lua_State* L) { return push_infos(L, 1); }

/* Names and tensors of one call, on the C stack for the usual handful and in
 * a collectable userdata beyond that. */
enum { kInline = 16 };
typedef struct io_list {
  uint32_t n;
  const char** names;
  axle_tensor_t** tensors;
  const char* names_inline[kInline];
  axle_tensor_t* tensors_inline[kInline];
} io_list;

/* Arrays larger than the inline ones live in a userdata left on top of the
 * stack: callers use absolute indices, so it shifts nothing, and it stays
 * reachable until the C function returns. */
static void io_reserve(lua_State* L, io_list* l, uint32_t n) {
  l->n = 0;
  l->names = l->names_inline;
  l->tensors = l->tensors_inline;
  if (n > kInline) {
    void* p = lua_newuserdatauv(L, (sizeof(char*) + sizeof(axle_tensor_t*)) * n, 0);
    l->names = (const char**)p;
    l->tensors = (axle_tensor_t**)((char*)p + sizeof(char*) * n);
  }
}

static uint32_t count_pairs(lua_State* L, int idx) {
  uint32_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (++n > 65536) luaL_error(L, "too many entries in the inputs/outputs table");
  }
  return n;
}

/* {name = tensor, ...} at idx. Key strings are borrowed: the table keeps them
 * alive and nothing modifies it during the call. */
static void read_inputs(lua_State* L, int idx, io_list* l) {
  io_reserve(L, l, count_pairs(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "inputs must be keyed by input name, got a %s key", luaL_typename(L, -2));
    lax_tensor* T = lax_tensor_test(L, -1);
    if (!T)
      luaL_error(L, "input '%s' must be an axle.tensor, got %s (see axle.tensor)",
                 lua_tostring(L, -2), luaL_typename(L, -1));
    l->names[l->n] = lua_tostring(L, -2);
    l->tensors[l->n] = T->t;
    ++l->n;
    lua_pop(L, 1);
  }
}

/* Outputs wanted: {"name", ...} selects outputs (new tensors); {name = tensor}
 * names a tensor to write in place (right dtype and shape). Both may mix. */
static void read_outputs(lua_State* L, int idx, io_list* l, int allow_inplace) {
  io_reserve(L, l, count_pairs(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) == LUA_TNUMBER) {
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "output names must be strings, got %s", luaL_typename(L, -1));
      l->names[l->n] = lua_tostring(L, -1);
      l->tensors[l->n] = NULL;
    } else if (lua_type(L, -2) == LUA_TSTRING && allow_inplace) {
      lax_tensor* T = lax_tensor_test(L, -1);
      if (!T)
        luaL_error(L, "output '%s' must be an axle.tensor to write into, got %s",
                   lua_tostring(L, -2), luaL_typename(L, -1));
      l->names[l->n] = lua_tostring(L, -2);
      l->tensors[l->n] = T->t;
    } else {
      luaL_error(L, "outputs must be a list of names%s",
                 allow_inplace ? " or {name = tensor}" : "");
    }
    ++l->n;
    lua_pop(L, 1);
  }
}

static uint32_t opt_timeout(lua_State* L, int idx) {
  lua_Integer t = luaL_optinteger(L, idx, 0);
  luaL_argcheck(L, t >= 0 && t <= 0x7fffffff, idx, "timeout must be 0..2^31-1 ms (0 = none)");
  return (uint32_t)t;
}

/* Fills l with every output of the session, by its own (borrowed) names. */
static void all_outputs(lua_State* L, lax_session* S, io_list* l) {
  uint32_t n = axle_session_output_count(S->s);
  io_reserve(L, l, n);
  for (uint32_t i = 0; i < n; ++i) {
    axle_tensor_info_t info = {.struct_size = sizeof(info)};
    axle_session_output_info(S->s, i, &info);
    l->names[i] = info.name;
    l->tensors[i] = NULL;
  }
  l->n = n;
}

/* s:run(inputs [, outputs [, timeout_ms]]) -> {name = tensor} | nil, msg, code */
static int s_run(lua_State* L) {
  lax_session* S = check_session(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int has_outputs = !lua_isnoneornil(L, 3);
  if (has_outputs) luaL_checktype(L, 3, LUA_TTABLE);
  axle_run_options_t ro = {.struct_size = sizeof(ro), .timeout_ms = opt_timeout(L, 4)};
  lua_settop(L, 3);
  io_list in, out;
  read_inputs(L, 2, &in);
  if (has_outputs) read_outputs(L, 3, &out, 1);
  else all_outputs(L, S, &out);

  /* Result table and empty userdatas first, so nothing the run creates can
   * be orphaned by an allocation failure afterwards. */
  lax_tensor* slots_inline[kInline];
  lax_tensor** slots = slots_inline;
  if (out.n > kInline) slots = (lax_tensor**)lua_newuserdatauv(L, sizeof(*slots) * out.n, 0);
  lua_createtable(L, 0, (int)out.n);
  int result = lua_gettop(L);
  for (uint32_t i = 0; i < out.n; ++i) {
    if (out.tensors[i]) {
      slots[i] = NULL;
      lua_getfield(L, 3, out.names[i]); /* the caller's own userdata */
    } else {
      slots[i] = lax_tensor_push_empty(L);
    }
    lua_setfield(L, result, out.names[i]);
  }
  axle_status_t st = axle_session_run(S->s, &ro, in.names, in.tensors, in.n,
                                      has_outputs ? out.names : NULL, out.tensors, out.n);
  if (st != AXLE_OK) return lax_fail(L, st);
  lax_gc* g = NULL;
  for (uint32_t i = 0; i < out.n; ++i)
    if (slots[i]) {
      slots[i]->t = out.tensors[i];
      lax_tensor_adopt(slots[i]);
      g = slots[i]->gc;
    }
  lua_settop(L, result);
  if (g) lax_gc_check(L, g);
  return 1;
}

/* s:submit(inputs [, output_names [, timeout_ms]]) -> event | nil, msg, code */
static int s_submit(lua_State* L) {
  lax_session* S = check_session(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int has_outputs = !lua_isnoneornil(L, 3);
  if (has_outputs) luaL_checktype(L, 3, LUA_TTABLE);
  axle_run_options_t ro = {.struct_size = sizeof(ro), .timeout_ms = opt_timeout(L, 4)};
  lua_settop(L, 3);
  io_list in, out;
  read_inputs(L, 2, &in);
  if (has_outputs) read_outputs(L, 3, &out, 0);
  else all_outputs(L, S, &out);
  lax_event* E = (lax_event*)lua_newuserdatauv(L, sizeof(*E), 2);
  E->e = NULL;
  luaL_setmetatable(L, LAX_EVENT);
  int ev = lua_gettop(L);
  /* The names the results will be keyed by, copied as Lua strings so the
   * event outlives the session and the caller's tables. */
  lua_createtable(L, (int)out.n, 0);
  for (uint32_t i = 0; i < out.n; ++i) {
    lua_pushstring(L, out.names[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setiuservalue(L, ev, EV_NAMES);
  axle_status_t st = axle_session_submit(S->s, &ro, in.names, in.tensors, in.n,
                                         has_outputs ? out.names : NULL, out.n, &E->e);
  if (st != AXLE_OK) return lax_fail(L, st);
  lua_settop(L, ev);
  return 1;
}

/* s:placement([format]) with format "text" (default) or "json". */
static int s_placement(lua_State* L) {
  lax_session* S = check_session(L, 1);
  static const char* const formats[] = {"text", "json", NULL};
  int fmt = luaL_checkoption(L, 2, "text", formats);
  char* text = NULL;
  axle_status_t st = axle_session_placement_report(S->s, fmt ? AXLE_REPORT_JSON : AXLE_REPORT_TEXT,
                                                   &text);
  if (st != AXLE_OK) return lax_fail(L, st);
  lua_pushstring(L, text);
  axle_free(text);
  return 1;
}

/* s:trace(path) writes Chrome trace JSON and returns true; s:trace() returns
 * the JSON itself. Sessions record only when created with profile = true. */
static int s_trace(lua_State* L) {
  lax_session* S = check_session(L, 1);
  axle_status_t st;
  if (!lua_isnoneornil(L, 2)) {
    const char* path = luaL_checkstring(L, 2);
    if ((st = axle_session_trace_write(S->s, path)) != AXLE_OK) return lax_fail(L, st);
    lua_pushboolean(L, 1);
    return 1;
  }
  char* json = NULL;
  if ((st = axle_session_trace_json(S->s, &json)) != AXLE_OK) return lax_fail(L, st);
  lua_pushstring(L, json);
  axle_free(json);
  return 1;
}

static int s_trace_clear(lua_State* L) {
  axle_session_trace_clear(check_session(L, 1)->s);
  return 0;
}

static int s_stats(lua_State* L) {
  lax_session* S = check_session(L, 1);
  axle_session_stats_t stats = {.struct_size = sizeof(stats)};
  axle_status_t st = axle_session_stats(S->s, &stats);
  if (st != AXLE_OK) return lax_fail(L, st);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)stats.planned_peak_bytes);
  lua_setfield(L, -2, "planned_peak_bytes");
  lua_pushinteger(L, (lua_Integer)stats.unplanned_bytes);
  lua_setfield(L, -2, "unplanned_bytes");
  lua_pushinteger(L, stats.partition_count);
  lua_setfield(L, -2, "partitions");
  lua_pushinteger(L, stats.node_count);
  lua_setfield(L, -2, "nodes");
  return 1;
}

static int s_tostring(lua_State* L) {
  lax_session* S = (lax_session*)luaL_checkudata(L, 1, LAX_SESSION);
  lua_getiuservalue(L, 1, 1);
  lua_pushfstring(L, "axle.session(%s)%s", lua_tostring(L, -1), S->s ? "" : " (closed)");
  return 1;
}

static int s_index(lua_State* L) {
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if (lua_type(L, 2) == LUA_TSTRING && strcmp(lua_tostring(L, 2), "path") == 0) {
    lua_getiuservalue(L, 1, 1);
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

/* ---- events ------------------------------------------------------------- */

/* ev:wait([timeout_ms]) -> true | nil, msg, code ("timeout" while running).
 * No timeout (or a negative one) waits until the run ends. */
static int e_wait(lua_State* L) {
  lax_event* E = check_event(L, 1);
  lua_Integer t = luaL_optinteger(L, 2, -1);
  axle_status_t st = axle_event_wait(E->e, t < 0 ? -1 : (int64_t)t);
  if (st != AXLE_OK) return lax_fail(L, st);
  lua_pushboolean(L, 1);
  return 1;
}

static int e_done(lua_State* L) {
  lua_pushboolean(L, axle_event_query(check_event(L, 1)->e) != AXLE_STATUS_PENDING);
  return 1;
}

/* ev:status() -> "pending", "ok" or the failure's status name. */
static int e_status(lua_State* L) {
  lua_pushstring(L, axle_status_string(axle_event_query(check_event(L, 1)->e)));
  return 1;
}

static int e_cancel(lua_State* L) {
  axle_status_t st = axle_event_cancel(check_event(L, 1)->e);
  if (st != AXLE_OK) return lax_fail(L, st);
  lua_pushboolean(L, 1);
  return 1;
}

static int e_fd(lua_State* L) {
  lua_pushinteger(L, lax_event_fd_at(L, 1));
  return 1;
}

/* ev:result() -> {name = tensor} once the run succeeded; nil, msg, code while
 * it runs ("pending") or when it failed. The same table on every call. */
static int e_result(lua_State* L) {
  lax_event* E = check_event(L, 1);
  if (lua_getiuservalue(L, 1, EV_RESULT) == LUA_TTABLE) return 1;
  lua_pop(L, 1);
  axle_status_t st = axle_event_query(E->e);
  if (st == AXLE_STATUS_PENDING) {
    /* query() reports pending without a message of its own. */
    lua_pushnil(L);
    lua_pushliteral(L, "the run has not completed yet");
    lua_pushstring(L, axle_status_string(st));
    return 3;
  }
  if (st != AXLE_OK) return lax_fail(L, st);
  lua_getiuservalue(L, 1, EV_NAMES);
  int names = lua_gettop(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, names);
  lua_createtable(L, 0, (int)n);
  int result = lua_gettop(L);
  for (lua_Integer i = 1; i <= n; ++i) {
    lax_tensor* T = lax_tensor_push_empty(L);
    if ((st = axle_event_output(E->e, (uint32_t)(i - 1), &T->t)) != AXLE_OK) return lax_fail(L, st);
    lax_tensor_adopt(T);
    lua_rawgeti(L, names, i);
    lua_insert(L, -2);
    lua_settable(L, result);
  }
  lua_pushvalue(L, result);
  lua_setiuservalue(L, 1, EV_RESULT);
  lua_settop(L, result);
  lax_gc_check(L, lax_gc_state(L));
  return 1;
}

/* The continuation of ev:await(): also its first step. A scheduler resumes
 * the coroutine when the yielded fd is readable; a resume before completion
 * (spurious, or a scheduler that just round-robins) simply yields again. */
static int e_await_k(lua_State* L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  lua_settop(L, 1); /* drop whatever resume() passed in */
  lax_event* E = check_event(L, 1);
  if (axle_event_query(E->e) == AXLE_STATUS_PENDING) {
    if (lua_isyieldable(L)) {
      lua_pushinteger(L, lax_event_fd_at(L, 1));
      lua_pushvalue(L, 1);
      return lua_yieldk(L, 2, 0, e_await_k);
    }
    /* Main thread or a non-yieldable C boundary: block instead. */
    axle_event_wait(E->e, -1);
  }
  return e_result(L);
}

/* ev:await() -> as ev:result(), after the run ends. Inside a coroutine it
 * yields fd, event until then; elsewhere it blocks like ev:wait(). */
static int e_await(lua_State* L) { return e_await_k(L, LUA_OK, 0); }

static int e_close(lua_State* L) {
  lax_event* E = (lax_event*)luaL_checkudata(L, 1, LAX_EVENT);
  /* A pending run is cancelled and waited for: its inputs stay alive until
   * then because the library retained them. */
  axle_event_release(E->e);
  E->e = NULL;
  return 0;
}

static int e_tostring(lua_State* L) {
  lax_event* E = (lax_event*)luaL_checkudata(L, 1, LAX_EVENT);
  lua_pushfstring(L, "axle.event (%s)",
                  E->e ? axle_status_string(axle_event_query(E->e)) : "closed");
  return 1;
}

static void new_class(lua_State* L, const char* name, const luaL_Reg* meta,
                      const luaL_Reg* methods, lua_CFunction index) {
  if (!luaL_newmetatable(L, name)) {
    lua_pop(L, 1);
    return;
  }
  luaL_setfuncs(L, meta, 0);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  if (index) lua_pushcclosure(L, index, 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

void lax_session_register(lua_State* L) {
  static const luaL_Reg s_methods[] = {
      {"inputs", s_inputs},         {"outputs", s_outputs},     {"run", s_run},
      {"submit", s_submit},         {"placement", s_placement}, {"trace", s_trace},
      {"trace_clear", s_trace_clear}, {"stats", s_stats},       {"close", s_close},
      {NULL, NULL}};
  static const luaL_Reg s_meta[] = {
      {"__gc", s_close}, {"__close", s_close}, {"__tostring", s_tostring}, {NULL, NULL}};
  new_class(L, LAX_SESSION, s_meta, s_methods, s_index);

  static const luaL_Reg e_methods[] = {
      {"wait", e_wait},     {"done", e_done},   {"status", e_status}, {"cancel", e_cancel},
      {"fd", e_fd},         {"result", e_result}, {"await", e_await}, {"close", e_close},
      {NULL, NULL}};
  static const luaL_Reg e_meta[] = {
      {"__gc", e_close}, {"__close", e_close}, {"__tostring", e_tostring}, {NULL, NULL}};
  new_class(L, LAX_EVENT, e_meta, e_methods, NULL);
}
