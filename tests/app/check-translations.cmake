# Checks that the translation file holds every string of the sources: lupdate runs over the sources into a copy
# of it, and the test fails naming each string the copy then has without a translation.
# Inputs: LUPDATE, GENERATOR (Qt's GenerateLUpdateProject.cmake), PROJECT_IN (the lupdate project that
# app/i18n's CMakeLists.txt writes at configure time), TS, WORK; PLURALS_ONLY for a file of plural forms alone
# (the source language's).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY "${TS}" DESTINATION "${WORK}")
get_filename_component(name "${TS}" NAME)
execute_process(COMMAND "${CMAKE_COMMAND}" -DIN_FILE=${PROJECT_IN} -DOUT_FILE=${WORK}/project.json -P ${GENERATOR}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not write the lupdate project from ${PROJECT_IN}")
endif()
set(only)
if(PLURALS_ONLY)
    set(only -pluralonly)
endif()
execute_process(COMMAND "${LUPDATE}" -project ${WORK}/project.json -ts ${WORK}/${name} -locations none -no-obsolete
                        ${only}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "lupdate failed:\n${out}${err}")
endif()
file(READ "${WORK}/${name}" text)
string(REGEX MATCHALL "<source>[^<]*</source>[ \n]*<translation type=\"unfinished\"" missing "${text}")
if(missing)
    string(REPLACE ";" "\n" missing "${missing}")
    message(FATAL_ERROR "strings of app/ and ui/ without a translation in ${name} (cmake --build --preset release "
                        "--target update_translations adds them; then translate them):\n${missing}")
endif()
message(STATUS "${name} translates every string: ${out}")
