# cmake -DIN=file -DOUT=header -DNAME=symbol -P embed.cmake: the bytes of IN as a C array NAME
# (and NAME_len), for headers that embed a small binary.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* Generated from ${IN}. */\n#pragma once\nstatic const unsigned char ${NAME}[] = {${bytes}};\nstatic const unsigned int ${NAME}_len = ${len};\n")
