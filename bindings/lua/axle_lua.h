/*
 * Lua 5.4 binding of Axle: the one symbol a host program needs.
 *
 * A Lua interpreter loads the module as axle.so through require("axle").
 * A program that embeds Lua links the module's objects and registers it with
 *
 *     luaL_requiref(L, "axle", luaopen_axle, 0);
 *     lua_pop(L, 1);
 *
 * after which scripts call require("axle") as usual. See docs/lua.md.
 */
#ifndef AXLE_LUA_H_
#define AXLE_LUA_H_

#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Pushes the module table. Each lua_State gets its own Axle runtime, created
 * on first use and released when the last session of that state is gone. */
__attribute__((visibility("default"))) int luaopen_axle(lua_State* L);

#ifdef __cplusplus
}
#endif
#endif /* AXLE_LUA_H_ */
