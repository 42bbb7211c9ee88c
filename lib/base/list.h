/*
 * list.h - the one intrusive doubly linked list.  An object is on a list,
 * whose ends head and tail (lvalues) are NULL when it is empty, through
 * two of its own fields, the previous and the next object, named P and N;
 * both are NULL when it is on no list.  Each argument is evaluated more
 * than once: pass names, not expressions with side effects.
 */
#ifndef CATS_LIST_H
#define CATS_LIST_H

#include <stddef.h>

/* Put o at the end of the list. */
#define CATS_LIST_APPEND(head, tail, o, P, N) do {			\
	(o)->P = (tail);						\
	(o)->N = NULL;							\
	if ((tail) != NULL)						\
		(tail)->N = (o);					\
	else								\
		(head) = (o);						\
	(tail) = (o);							\
} while (0)

/* Put o at the front of the list. */
#define CATS_LIST_PREPEND(head, tail, o, P, N) do {			\
	(o)->P = NULL;							\
	(o)->N = (head);						\
	if ((head) != NULL)						\
		(head)->P = (o);					\
	else								\
		(tail) = (o);						\
	(head) = (o);							\
} while (0)

/* Take o, which is on the list, off it. */
#define CATS_LIST_REMOVE(head, tail, o, P, N) do {			\
	if ((o)->P != NULL)						\
		(o)->P->N = (o)->N;					\
	else								\
		(head) = (o)->N;					\
	if ((o)->N != NULL)						\
		(o)->N->P = (o)->P;					\
	else								\
		(tail) = (o)->P;					\
	(o)->P = (o)->N = NULL;						\
} while (0)

#endif
