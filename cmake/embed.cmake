# Writes OUTPUT from TEMPLATE with @FULGUR_PAGE_BYTES@ replaced by the bytes of INPUT as a C
# initializer list ("0x3c,0x21,..."), so a static file is compiled into the binary with no tool
# beyond CMake. Run as `cmake -DINPUT=... -DTEMPLATE=... -DOUTPUT=... -P embed.cmake`.
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," FULGUR_PAGE_BYTES "${hex}")
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
