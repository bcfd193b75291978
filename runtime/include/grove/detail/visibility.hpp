// grove/detail/visibility.hpp: GROVE_PUBLIC_BEGIN / GROVE_PUBLIC_END, which every public header puts
// around what it declares. Internal to Grove. Not part of the API.
//
// A shared build compiles Grove's sources with hidden visibility (cmake/grove_add_library.cmake), so
// only what a public header declares between these marks is exported: the API, and the templates'
// helpers in grove::detail that inline code calls; grove::internal (runtime/src) and the bundled
// llhttp stay inside the library. Template instantiations a library makes of a public template
// (detail::message_type_of<grove::down>, whose address is a message type's identity) are exported
// too, so an application and the library agree on them. In a static build, and in code that uses
// Grove, the marks change nothing.
#pragma once

#define GROVE_PUBLIC_BEGIN _Pragma("GCC visibility push(default)")
#define GROVE_PUBLIC_END _Pragma("GCC visibility pop")

// On a friend function a public class declares and the library defines out of line: GCC gives such a
// friend the visibility of the class's own members' defaults, not the pragma's, so it is said here.
#define GROVE_API __attribute__((visibility("default")))

// On a public class's nested type that only the library defines and uses (runtime::state): kept
// inside a shared library although its enclosing class is exported. Only while building one
// (cmake/grove_add_library.cmake defines GROVE_BUILDING_SHARED): elsewhere the internal types that
// hold it are not hidden, and GCC would warn about each of them.
#ifdef GROVE_BUILDING_SHARED
#define GROVE_INTERNAL __attribute__((visibility("hidden")))
#else
#define GROVE_INTERNAL
#endif
