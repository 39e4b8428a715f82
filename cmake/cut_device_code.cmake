# cmake -DIN=cuda/x.cu -DOUT=build/emu/x_body.inc -P cmake/cut_device_code.cmake
# The device code of a cuda/*.cu file for the host emulation (spec/gpu/emulated.h): everything
# above its "==== host side" line, without the #include "common.cuh" (the emulation supplies it).
file(READ ${IN} text)
string(FIND "${text}" "==== host side" cut)
if(cut LESS 0)
  message(FATAL_ERROR "${IN} has no '==== host side' line")
endif()
string(SUBSTRING "${text}" 0 ${cut} device)
# drop the comment line the marker sits in
string(FIND "${device}" "\n" last REVERSE)
string(SUBSTRING "${device}" 0 ${last} device)
string(REPLACE "#include \"common.cuh\"" "" device "${device}")
file(WRITE ${OUT}.tmp "${device}\n")
file(RENAME ${OUT}.tmp ${OUT})
