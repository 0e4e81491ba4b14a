# dice_write_target_list(FILE): writes FILE, a JSON list of the project's
# libraries and executables under lib/, dialects/, passes/ and tools/:
#   [{"name": ..., "dir": <source folder>, "sources": [...], "links": [...]}]
# `links` are the target's own LINK_LIBRARIES as CMake holds them (target
# names or paths); the include-rule test derives each target's build half
# from them.

function(dice_collect_targets dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  set(all ${targets})
  foreach(sub IN LISTS subdirs)
    dice_collect_targets("${sub}" more)
    list(APPEND all ${more})
  endforeach()
  set(${out} ${all} PARENT_SCOPE)
endfunction()

function(dice_json_list out)
  set(items "")
  foreach(item IN LISTS ARGN)
    string(REPLACE "\\" "\\\\" item "${item}")
    string(REPLACE "\"" "\\\"" item "${item}")
    list(APPEND items "\"${item}\"")
  endforeach()
  list(JOIN items ", " joined)
  set(${out} "[${joined}]" PARENT_SCOPE)
endfunction()

function(dice_write_target_list file)
  set(entries "")
  set(roots lib tools)
  if(DICE_ENABLE_COMPILER)
    list(APPEND roots dialects passes)  # folders only the compiler half adds
  endif()
  foreach(root IN LISTS roots)
    dice_collect_targets("${CMAKE_SOURCE_DIR}/${root}" targets)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
        continue()
      endif()
      get_target_property(dir ${target} SOURCE_DIR)
      get_target_property(sources ${target} SOURCES)
      get_target_property(links ${target} LINK_LIBRARIES)
      if(NOT links)
        set(links "")
      endif()
      file(RELATIVE_PATH reldir "${CMAKE_SOURCE_DIR}" "${dir}")
      dice_json_list(sources_json ${sources})
      dice_json_list(links_json ${links})
      list(APPEND entries
        "{\"name\": \"${target}\", \"dir\": \"${reldir}\", \"sources\": ${sources_json}, \"links\": ${links_json}}")
    endforeach()
  endforeach()
  list(JOIN entries ",\n " body)
  file(WRITE "${file}" "[${body}]\n")
endfunction()
