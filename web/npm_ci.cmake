# Installs the dashboard's npm packages into the build dir: `cmake -DNPM=npm -DSOURCE=web
# -DDIR=build/x/web -DSTAMP=file -P npm_ci.cmake`. Run by web/CMakeLists.txt only when
# package.json or package-lock.json changed (the stamp). Install scripts are not run: no
# package's code runs at install time (esbuild finds its binary in its platform package).
foreach(f package.json package-lock.json)
  configure_file(${SOURCE}/${f} ${DIR}/${f} COPYONLY)
endforeach()
execute_process(
  COMMAND ${NPM} ci --ignore-scripts --no-audit --no-fund --loglevel=error
  WORKING_DIRECTORY ${DIR}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR
    "gpufleet web dashboard: `npm ci` failed in ${DIR} (exit ${rc}; npm's message is above). "
    "It needs the npm registry (npm config get registry) or a filled npm cache. To build "
    "gpufleet without the dashboard, configure with -DGF_WEB=OFF.")
endif()
file(TOUCH ${STAMP})
