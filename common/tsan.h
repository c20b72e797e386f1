/* SPDX-License-Identifier: BSD-3-Clause */
/* tsan.h — telling ThreadSanitizer about orderings it cannot see. liburcu's
 * lock-free stacks (push, pop, pop_all) order memory with atomics in a library
 * that is not instrumented, so TSan would report the hand-over of an element
 * as a race. RCI_TSAN_RELEASE(p) before an element is pushed and
 * RCI_TSAN_ACQUIRE(p) after it is popped state that edge; in builds without
 * TSan both are nothing. */
#ifndef RCI_TSAN_H
#define RCI_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define RCI_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RCI_TSAN 1
#endif
#endif

#ifdef RCI_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define RCI_TSAN_RELEASE(p) __tsan_release(p)
#define RCI_TSAN_ACQUIRE(p) __tsan_acquire(p)
#else
#define RCI_TSAN_RELEASE(p) ((void)(p))
#define RCI_TSAN_ACQUIRE(p) ((void)(p))
#endif

#endif
