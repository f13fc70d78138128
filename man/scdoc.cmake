# cmake -DSCDOC=scdoc -DIN=page.scd -DOUT=page -P scdoc.cmake
# scdoc reads stdin and writes stdout; a failure leaves no output behind.
execute_process(
    COMMAND ${SCDOC}
    INPUT_FILE ${IN}
    OUTPUT_FILE ${OUT}.tmp
    RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    file(REMOVE ${OUT}.tmp)
    message(FATAL_ERROR "scdoc failed on ${IN} (${rc})")
endif()
file(RENAME ${OUT}.tmp ${OUT})
