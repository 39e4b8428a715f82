# fastnn.h -> lua/fastnn/cdef.lua: drop preprocessor lines, the extern "C" braces and FNN_API,
# so LuaJIT's ffi.cdef reads the header as is (works on the whole text: CMake lists mangle ';' and '[').
file(READ ${HEADER} text)
string(REGEX REPLACE "(^|\n)#[^\n]*" "\\1" text "${text}")
string(REGEX REPLACE "\nextern \"C\" {\n" "\n" text "${text}")
string(REGEX REPLACE "\n}\n" "\n" text "${text}")
string(REPLACE "FNN_API " "" text "${text}")
string(RANDOM LENGTH 10 tag)
file(WRITE ${OUT}.${tag} "-- generated from core/include/fastnn.h by cmake/gen_cdef.cmake; do not edit\nreturn [==[\n${text}]==]\n")
file(RENAME ${OUT}.${tag} ${OUT})
