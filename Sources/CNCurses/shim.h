// ncursesw for Swift. SwiftPM drops pkg-config's -D flags, so the wide-character API is
// switched on here, before the include. Macros and C globals that Swift cannot import (or,
// in Swift 6 mode, calls "not concurrency-safe") are wrapped in static inline functions.
#ifndef REQTOP_CNCURSES_SHIM_H
#define REQTOP_CNCURSES_SHIM_H

#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <ncursesw/curses.h>
#include <locale.h>
#include <langinfo.h>

static inline WINDOW *reqtop_stdscr(void) { return stdscr; }
static inline WINDOW *reqtop_curscr(void) { return curscr; }
static inline int reqtop_lines(void) { return LINES; }
static inline int reqtop_cols(void) { return COLS; }
static inline int reqtop_colors(void) { return COLORS; }
static inline attr_t reqtop_a_normal(void) { return A_NORMAL; }
static inline attr_t reqtop_a_bold(void) { return A_BOLD; }
static inline attr_t reqtop_a_reverse(void) { return A_REVERSE; }
static inline attr_t reqtop_a_dim(void) { return A_DIM; }
static inline attr_t reqtop_a_underline(void) { return A_UNDERLINE; }
static inline attr_t reqtop_color_pair(int pair) { return COLOR_PAIR(pair); }
static inline int reqtop_key_resize(void) { return KEY_RESIZE; }
static inline int reqtop_key_up(void) { return KEY_UP; }
static inline int reqtop_key_down(void) { return KEY_DOWN; }
static inline int reqtop_key_left(void) { return KEY_LEFT; }
static inline int reqtop_key_right(void) { return KEY_RIGHT; }
static inline int reqtop_key_ppage(void) { return KEY_PPAGE; }
static inline int reqtop_key_npage(void) { return KEY_NPAGE; }
static inline int reqtop_key_home(void) { return KEY_HOME; }
static inline int reqtop_key_end(void) { return KEY_END; }
static inline int reqtop_key_enter(void) { return KEY_ENTER; }
static inline int reqtop_key_backspace(void) { return KEY_BACKSPACE; }
static inline int reqtop_key_btab(void) { return KEY_BTAB; }
static inline int reqtop_key_f1(void) { return KEY_F(1); }
static inline const char *reqtop_codeset(void) { return nl_langinfo(CODESET); }

#include <term.h>
/* Whether ncurses can drive the terminal named TERM, before initscr (which exits the
   process when it cannot): 0 yes; 1 no terminfo entry for it; 2 no terminfo database;
   3 it cannot move the cursor (dumb, hardcopy). */
static inline int reqtop_terminal_problem(const char *term) {
    int error = 0;
    if (setupterm(term, 1, &error) != OK) return error == -1 ? 2 : 1;
    const char *cup = tigetstr("cup");
    int usable = cup != NULL && cup != (char *)-1 && tigetflag("hc") <= 0;
    del_curterm(cur_term);
    return usable ? 0 : 3;
}

#endif
