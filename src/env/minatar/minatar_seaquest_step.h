/* MinAtar Seaquest for one env (minatar 1.0.15, environments/seaquest.py, as MinAtar/Seaquest-v1
 * wraps it, difficulty ramping on): the single definition that the CPU env def
 * (minatar_seaquest.c) calls and a CUDA kernel can run one thread per env.
 *
 * The player's submarine (front and back cell) shoots fish and enemy subs (+1 each), which
 * spawn at either edge of rows 1-8 and cross; enemy subs shoot. It picks up divers (at most 6)
 * and must surface (row 0) before its 200 oxygen run out: surfacing with 1-5 divers costs one
 * and refills the oxygen; with 6 it pays oxygen * 10 / 200 and empties the diver bar - to -1,
 * as MinAtar's _surface subtracts one after zeroing, and from then on surfacing never ends the
 * game for want of divers. Every surfacing ramps the difficulty (spawn interval down to 1,
 * every other time the move interval down to 2). Terminated when hit by a fish, a sub or a
 * bullet, when the oxygen is gone, or when surfacing with no diver.
 *
 * MinAtar keeps fish, subs, bullets and divers in Python lists and updates them with
 * `for obj in reversed(list)` loops that remove from the list they walk, with list.remove(obj),
 * which removes the FIRST element equal in value. The lists below replay those semantics
 * exactly (CPython's reversed iterator: next index = previous index - 1, stop once it is past
 * the end; a cursor follows the object being updated, which list.remove may leave in place when
 * an earlier element equals it), so even equal-valued objects are handled as MinAtar does.
 * Capacities are proven bounds, not guesses: an enemy lives at most 5 + 9 * 6 = 59 steps and
 * at most one spawns per step (<= 60 alive); an enemy bullet lives <= 11 steps and each sub
 * shoots once per 11 steps (<= 71); divers spawn every 31 steps and live <= 59 (<= 2); the
 * player shoots once per 5 steps and a bullet lives <= 10 (<= 2). `overflow` records an append
 * past capacity (never expected; the unit test checks it).
 *
 * Channels: 0 sub_front, 1 sub_back, 2 friendly bullet, 3 trail, 4 enemy bullet, 5 enemy fish,
 * 6 enemy sub, 7 oxygen gauge, 8 diver gauge, 9 diver. Seaquest-v1's minimal action set is the
 * full one: 0 noop, 1 left, 2 up, 3 right, 4 down, 5 fire. Random draws per step: the sticky
 * action; on an enemy spawn step rand() (side), rand() (sub or fish), randint(1, 9) (row); on a
 * diver spawn step rand() (side), randint(1, 9) (row). */
#ifndef CUDARL_MINATAR_SEAQUEST_STEP_H
#define CUDARL_MINATAR_SEAQUEST_STEP_H

#include <stddef.h>

#include "env/minatar/minatar_common.h"

#define CR_SEAQUEST_CHANNELS 10
#define CR_SEAQUEST_NUM_ACTIONS 6
#define CR_SEAQUEST_MAX_OXYGEN 200
#define CR_SEAQUEST_INIT_SPAWN_SPEED 20
#define CR_SEAQUEST_DIVER_SPAWN_SPEED 30
#define CR_SEAQUEST_INIT_MOVE_INTERVAL 5
#define CR_SEAQUEST_SHOT_COOL_DOWN 5
#define CR_SEAQUEST_ENEMY_SHOT_INTERVAL 10
#define CR_SEAQUEST_DIVER_MOVE_INTERVAL 5
#define CR_SEAQUEST_MAX_ENEMIES 64   /* fish, and subs (<= 60 alive in all) */
#define CR_SEAQUEST_MAX_E_BULLETS 80 /* <= 71 alive */
#define CR_SEAQUEST_MAX_F_BULLETS 4  /* <= 2 alive */
#define CR_SEAQUEST_MAX_DIVERS 4     /* <= 2 alive */

/* One list element: fish [x, y, lr, timer], sub [x, y, lr, timer, shot], diver
 * [x, y, lr, timer], bullet [x, y, dir]; unused fields stay 0 so equality is MinAtar's. */
typedef struct cr_minatar_seaquest_obj {
    int8_t x, y;
    int8_t dir;   /* 1: moves right */
    int8_t timer; /* steps until the next move */
    int8_t shot;  /* subs: steps until the next shot */
} cr_minatar_seaquest_obj;

typedef struct cr_minatar_seaquest_state {
    cr_philox_state rng;
    int32_t last_action; /* full action set; survives resets, as MinAtar's */
    int32_t oxygen, diver_count;
    int32_t sub_x, sub_y, sub_or; /* sub_or: 1 facing right */
    int32_t e_spawn_speed, e_spawn_timer, d_spawn_timer;
    int32_t move_speed, ramp_index, shot_timer;
    int32_t surface; /* at the surface since the last refill */
    int32_t terminal;
    int32_t overflow;
    int32_t n_fish, n_subs, n_e_bullets, n_f_bullets, n_divers;
    cr_minatar_seaquest_obj fish[CR_SEAQUEST_MAX_ENEMIES];
    cr_minatar_seaquest_obj subs[CR_SEAQUEST_MAX_ENEMIES];
    cr_minatar_seaquest_obj e_bullets[CR_SEAQUEST_MAX_E_BULLETS];
    cr_minatar_seaquest_obj f_bullets[CR_SEAQUEST_MAX_F_BULLETS];
    cr_minatar_seaquest_obj divers[CR_SEAQUEST_MAX_DIVERS];
} cr_minatar_seaquest_state;

/* ---- Python list semantics ---------------------------------------------------------------- */

/* A view of one list of the state (elements v, count *n, capacity cap); lives on the stack. */
typedef struct cr_sq_list {
    cr_minatar_seaquest_obj *v;
    int32_t *n;
    int cap;
} cr_sq_list;

/* The object a reversed loop is updating: at v[idx] while still in the list, else the copy
 * `dead` that Python's loop variable would still hold after list.remove took it out. */
typedef struct cr_sq_cursor {
    int idx;
    int alive;
    cr_minatar_seaquest_obj dead;
} cr_sq_cursor;

CR_HD static inline cr_sq_list cr_sq_view(cr_minatar_seaquest_obj *v, int32_t *n, int cap) {
    cr_sq_list l = {v, n, cap};
    return l;
}

/* Python list equality of two elements. */
CR_HD static inline int cr_sq_equal(cr_minatar_seaquest_obj a, cr_minatar_seaquest_obj b) {
    return a.x == b.x && a.y == b.y && a.dir == b.dir && a.timer == b.timer && a.shot == b.shot;
}

/* obj[0:2] == [x, y]. */
CR_HD static inline int cr_sq_at_cell(cr_minatar_seaquest_obj o, int x, int y) {
    return o.x == x && o.y == y;
}

/* The cursor's object (in the list, or its removed copy). */
CR_HD static inline cr_minatar_seaquest_obj *cr_sq_get(cr_sq_list l, cr_sq_cursor *c) {
    return c->alive ? &l.v[c->idx] : &c->dead;
}

/* list.append(o); sets *overflow past capacity (never expected, see the capacities). */
CR_HD static inline void cr_sq_append(cr_sq_list l, cr_minatar_seaquest_obj o, int32_t *overflow) {
    if (*l.n < l.cap) l.v[(*l.n)++] = o;
    else *overflow = 1;
}

/* list.remove(value): removes the first element equal to value, keeping cursor c (NULL when
 * the list is not the one being walked) on its object. */
CR_HD static inline void cr_sq_remove(cr_sq_list l, cr_minatar_seaquest_obj value,
                                      cr_sq_cursor *c) {
    int j = 0;
    while (j < *l.n && !cr_sq_equal(l.v[j], value)) j++;
    if (j == *l.n) return; /* unreachable: every removed value is in its list */
    if (c && c->alive) {
        if (j == c->idx) {
            c->dead = l.v[j];
            c->alive = 0;
        } else if (j < c->idx) {
            c->idx -= 1;
        }
    }
    for (int k = j; k + 1 < *l.n; k++) l.v[k] = l.v[k + 1];
    *l.n -= 1;
}

/* obj[0] += 1 if obj[2] else -1. */
CR_HD static inline void cr_sq_advance(cr_minatar_seaquest_obj *o) {
    o->x = (int8_t)(o->x + (o->dir ? 1 : -1));
}

CR_HD static inline int cr_sq_outside(cr_minatar_seaquest_obj o) { return o.x < 0 || o.x > 9; }

#define CR_SQ_FISH(s) cr_sq_view((s)->fish, &(s)->n_fish, CR_SEAQUEST_MAX_ENEMIES)
#define CR_SQ_SUBS(s) cr_sq_view((s)->subs, &(s)->n_subs, CR_SEAQUEST_MAX_ENEMIES)
#define CR_SQ_E_BULLETS(s) cr_sq_view((s)->e_bullets, &(s)->n_e_bullets, CR_SEAQUEST_MAX_E_BULLETS)
#define CR_SQ_F_BULLETS(s) cr_sq_view((s)->f_bullets, &(s)->n_f_bullets, CR_SEAQUEST_MAX_F_BULLETS)
#define CR_SQ_DIVERS(s) cr_sq_view((s)->divers, &(s)->n_divers, CR_SEAQUEST_MAX_DIVERS)

/* ---- the game ----------------------------------------------------------------------------- */

/* Seeds the env with stream `index` of `seed`; the sticky action starts as noop. */
CR_HD static inline void cr_minatar_seaquest_seed(cr_minatar_seaquest_state *s, uint64_t seed,
                                                  uint64_t index) {
    cr_philox_seed_hd(&s->rng, seed, index);
    s->last_action = CR_MINATAR_NOOP;
}

/* state[y, x, c] = 1 with numpy's indexing: x = -1 is column 9 (x > 9 would raise; never). */
CR_HD static inline void cr_sq_obs_set(uint8_t *obs, int c, int y, int x) {
    if (x < 0) x += CR_MINATAR_SIZE;
    if (x >= 0 && x < CR_MINATAR_SIZE && y >= 0 && y < CR_MINATAR_SIZE)
        cr_minatar_obs_set(obs, c, y, x);
}

/* An enemy or diver in channel c, with its trail (the cell behind it) where that is on screen. */
CR_HD static inline void cr_sq_obs_mover(uint8_t *obs, int c, cr_minatar_seaquest_obj o) {
    cr_sq_obs_set(obs, c, o.y, o.x);
    int back_x = o.dir ? o.x - 1 : o.x + 1;
    if (back_x >= 0 && back_x <= 9) cr_sq_obs_set(obs, 3, o.y, back_x);
}

/* Writes s's observation obs (10, 10, 10): Env.state() transposed to channels first. */
CR_HD static inline void cr_minatar_seaquest_observe(const cr_minatar_seaquest_state *s,
                                                     uint8_t *obs) {
    cr_minatar_obs_clear(obs, CR_SEAQUEST_CHANNELS);
    cr_sq_obs_set(obs, 0, s->sub_y, s->sub_x);
    cr_sq_obs_set(obs, 1, s->sub_y, s->sub_or ? s->sub_x - 1 : s->sub_x + 1);
    int oxygen_cells = (s->oxygen > 0 ? s->oxygen : 0) * 10 / CR_SEAQUEST_MAX_OXYGEN;
    for (int x = 0; x < oxygen_cells && x < CR_MINATAR_SIZE; x++) cr_sq_obs_set(obs, 7, 9, x);
    for (int x = 9 - s->diver_count; x < 9; x++) cr_sq_obs_set(obs, 8, 9, x); /* 9-dc:9 */
    for (int i = 0; i < s->n_f_bullets; i++)
        cr_sq_obs_set(obs, 2, s->f_bullets[i].y, s->f_bullets[i].x);
    for (int i = 0; i < s->n_e_bullets; i++)
        cr_sq_obs_set(obs, 4, s->e_bullets[i].y, s->e_bullets[i].x);
    for (int i = 0; i < s->n_fish; i++) cr_sq_obs_mover(obs, 5, s->fish[i]);
    for (int i = 0; i < s->n_subs; i++) cr_sq_obs_mover(obs, 6, s->subs[i]);
    for (int i = 0; i < s->n_divers; i++) cr_sq_obs_mover(obs, 9, s->divers[i]);
}

/* Env.reset: the sub on the surface at column 5 facing left, full oxygen, no divers, empty sea.
 * Writes obs. No random draws. */
CR_HD static inline void cr_minatar_seaquest_reset(cr_minatar_seaquest_state *s, uint8_t *obs) {
    s->oxygen = CR_SEAQUEST_MAX_OXYGEN;
    s->diver_count = 0;
    s->sub_x = 5;
    s->sub_y = 0;
    s->sub_or = 0;
    s->n_fish = s->n_subs = s->n_e_bullets = s->n_f_bullets = s->n_divers = 0;
    s->e_spawn_speed = CR_SEAQUEST_INIT_SPAWN_SPEED;
    s->e_spawn_timer = s->e_spawn_speed;
    s->d_spawn_timer = CR_SEAQUEST_DIVER_SPAWN_SPEED;
    s->move_speed = CR_SEAQUEST_INIT_MOVE_INTERVAL;
    s->ramp_index = 0;
    s->shot_timer = 0;
    s->surface = 1;
    s->terminal = 0;
    s->overflow = 0;
    cr_minatar_seaquest_observe(s, obs);
}

/* Env._spawn_enemy: side, kind and row are drawn; nothing spawns in a row where an enemy
 * already heads the other way. */
CR_HD static inline void cr_minatar_seaquest_spawn_enemy(cr_minatar_seaquest_state *s) {
    int lr = cr_minatar_rand(&s->rng) < 1.0 / 2;
    int is_sub = cr_minatar_rand(&s->rng) < 1.0 / 3;
    int y = cr_minatar_randint(&s->rng, 1, 9);
    for (int i = 0; i < s->n_subs; i++)
        if (s->subs[i].y == y && s->subs[i].dir != lr) return;
    for (int i = 0; i < s->n_fish; i++)
        if (s->fish[i].y == y && s->fish[i].dir != lr) return;
    cr_minatar_seaquest_obj o = {(int8_t)(lr ? 0 : 9), (int8_t)y, (int8_t)lr,
                                 (int8_t)s->move_speed, 0};
    if (is_sub) {
        o.shot = CR_SEAQUEST_ENEMY_SHOT_INTERVAL;
        cr_sq_append(CR_SQ_SUBS(s), o, &s->overflow);
    } else {
        cr_sq_append(CR_SQ_FISH(s), o, &s->overflow);
    }
}

/* Env._spawn_diver: side and row are drawn. */
CR_HD static inline void cr_minatar_seaquest_spawn_diver(cr_minatar_seaquest_state *s) {
    int lr = cr_minatar_rand(&s->rng) < 1.0 / 2;
    int y = cr_minatar_randint(&s->rng, 1, 9);
    cr_minatar_seaquest_obj o = {(int8_t)(lr ? 0 : 9), (int8_t)y, (int8_t)lr,
                                 CR_SEAQUEST_DIVER_MOVE_INTERVAL, 0};
    cr_sq_append(CR_SQ_DIVERS(s), o, &s->overflow);
}

/* The friendly bullets fly; one that meets a fish (else a sub) removes it and itself. */
CR_HD static inline int cr_minatar_seaquest_update_f_bullets(cr_minatar_seaquest_state *s) {
    cr_sq_list bullets = CR_SQ_F_BULLETS(s), fish = CR_SQ_FISH(s), subs = CR_SQ_SUBS(s);
    int r = 0;
    for (int i = *bullets.n - 1; i >= 0 && i < *bullets.n; i--) {
        cr_sq_cursor c = {i, 1, {0, 0, 0, 0, 0}};
        cr_minatar_seaquest_obj *b = cr_sq_get(bullets, &c);
        cr_sq_advance(b);
        if (cr_sq_outside(*b)) {
            cr_sq_remove(bullets, *b, &c);
            continue;
        }
        int removed = 0;
        for (int k = 0; k < *fish.n; k++)
            if (cr_sq_at_cell(fish.v[k], b->x, b->y)) {
                cr_sq_remove(fish, fish.v[k], NULL);
                cr_sq_remove(bullets, *b, &c);
                r += 1;
                removed = 1;
                break;
            }
        if (removed) continue;
        b = cr_sq_get(bullets, &c);
        for (int k = 0; k < *subs.n; k++)
            if (cr_sq_at_cell(subs.v[k], b->x, b->y)) {
                cr_sq_remove(subs, subs.v[k], NULL);
                cr_sq_remove(bullets, *b, &c);
                r += 1;
                break;
            }
    }
    return r;
}

/* The divers drift one cell every 6 steps; the sub picks up one it meets while it has < 6. */
CR_HD static inline void cr_minatar_seaquest_update_divers(cr_minatar_seaquest_state *s) {
    cr_sq_list divers = CR_SQ_DIVERS(s);
    for (int i = *divers.n - 1; i >= 0 && i < *divers.n; i--) {
        cr_sq_cursor c = {i, 1, {0, 0, 0, 0, 0}};
        cr_minatar_seaquest_obj *d = cr_sq_get(divers, &c);
        if (cr_sq_at_cell(*d, s->sub_x, s->sub_y) && s->diver_count < 6) {
            cr_sq_remove(divers, *d, &c);
            s->diver_count += 1;
        } else if (d->timer == 0) {
            d->timer = CR_SEAQUEST_DIVER_MOVE_INTERVAL;
            cr_sq_advance(d);
            if (cr_sq_outside(*d)) {
                cr_sq_remove(divers, *d, &c);
            } else if (cr_sq_at_cell(*d, s->sub_x, s->sub_y) && s->diver_count < 6) {
                cr_sq_remove(divers, *d, &c);
                s->diver_count += 1;
            }
        } else {
            d->timer -= 1;
        }
    }
}

/* Fish (shoots = 0) or subs (shoots = 1) move every move_speed + 1 steps; touching the player
 * terminates, moving onto a friendly bullet removes both (+1). A sub shoots every 11 steps,
 * even on the step it left the screen or was shot (MinAtar's loop goes on with the removed
 * object). */
CR_HD static inline int cr_minatar_seaquest_update_enemies(cr_minatar_seaquest_state *s,
                                                           cr_sq_list enemies, int shoots) {
    cr_sq_list bullets = CR_SQ_F_BULLETS(s);
    int r = 0;
    for (int i = *enemies.n - 1; i >= 0 && i < *enemies.n; i--) {
        cr_sq_cursor c = {i, 1, {0, 0, 0, 0, 0}};
        cr_minatar_seaquest_obj *e = cr_sq_get(enemies, &c);
        if (cr_sq_at_cell(*e, s->sub_x, s->sub_y)) s->terminal = 1;
        if (e->timer == 0) {
            e->timer = (int8_t)s->move_speed;
            cr_sq_advance(e);
            if (cr_sq_outside(*e)) {
                cr_sq_remove(enemies, *e, &c);
            } else if (cr_sq_at_cell(*e, s->sub_x, s->sub_y)) {
                s->terminal = 1;
            } else {
                for (int k = 0; k < *bullets.n; k++)
                    if (cr_sq_at_cell(*e, bullets.v[k].x, bullets.v[k].y)) {
                        cr_sq_remove(enemies, *e, &c);
                        cr_sq_remove(bullets, bullets.v[k], NULL);
                        r += 1;
                        break;
                    }
            }
        } else {
            e->timer -= 1;
        }
        if (!shoots) continue;
        e = cr_sq_get(enemies, &c);
        if (e->shot == 0) {
            e->shot = CR_SEAQUEST_ENEMY_SHOT_INTERVAL;
            cr_minatar_seaquest_obj b = {e->x, e->y, e->dir, 0, 0};
            cr_sq_append(CR_SQ_E_BULLETS(s), b, &s->overflow);
        } else {
            e->shot -= 1;
        }
    }
    return r;
}

/* Enemy bullets fly one cell per step; meeting the player before or after the move terminates. */
CR_HD static inline void cr_minatar_seaquest_update_e_bullets(cr_minatar_seaquest_state *s) {
    cr_sq_list bullets = CR_SQ_E_BULLETS(s);
    for (int i = *bullets.n - 1; i >= 0 && i < *bullets.n; i--) {
        cr_sq_cursor c = {i, 1, {0, 0, 0, 0, 0}};
        cr_minatar_seaquest_obj *b = cr_sq_get(bullets, &c);
        if (cr_sq_at_cell(*b, s->sub_x, s->sub_y)) s->terminal = 1;
        cr_sq_advance(b);
        if (cr_sq_outside(*b)) cr_sq_remove(bullets, *b, &c);
        else if (cr_sq_at_cell(*b, s->sub_x, s->sub_y)) s->terminal = 1;
    }
}

/* Env._surface: refills the oxygen, pays for 6 divers, takes one diver, ramps the difficulty. */
CR_HD static inline int cr_minatar_seaquest_surface(cr_minatar_seaquest_state *s) {
    int r = 0;
    s->surface = 1;
    if (s->diver_count == 6) {
        s->diver_count = 0;
        r = s->oxygen * 10 / CR_SEAQUEST_MAX_OXYGEN; /* oxygen > 0 here: // is / */
    }
    s->oxygen = CR_SEAQUEST_MAX_OXYGEN;
    s->diver_count -= 1;
    if (s->e_spawn_speed > 1 || s->move_speed > 2) { /* ramping (on in every MinAtar gym id) */
        if (s->move_speed > 2 && s->ramp_index % 2) s->move_speed -= 1;
        if (s->e_spawn_speed > 1) s->e_spawn_speed -= 1;
        s->ramp_index += 1;
    }
    return r;
}

/* Env.act with full action `a`; returns the reward. */
CR_HD static inline int cr_minatar_seaquest_act(cr_minatar_seaquest_state *s, int a) {
    int r = 0;
    if (s->terminal) return r;
    if (s->e_spawn_timer == 0) {
        cr_minatar_seaquest_spawn_enemy(s);
        s->e_spawn_timer = s->e_spawn_speed;
    }
    if (s->d_spawn_timer == 0) {
        cr_minatar_seaquest_spawn_diver(s);
        s->d_spawn_timer = CR_SEAQUEST_DIVER_SPAWN_SPEED;
    }
    if (a == CR_MINATAR_FIRE && s->shot_timer == 0) {
        cr_minatar_seaquest_obj b = {(int8_t)s->sub_x, (int8_t)s->sub_y, (int8_t)s->sub_or, 0, 0};
        cr_sq_append(CR_SQ_F_BULLETS(s), b, &s->overflow);
        s->shot_timer = CR_SEAQUEST_SHOT_COOL_DOWN;
    } else if (a == CR_MINATAR_LEFT) {
        s->sub_x = s->sub_x - 1 > 0 ? s->sub_x - 1 : 0;
        s->sub_or = 0;
    } else if (a == CR_MINATAR_RIGHT) {
        s->sub_x = s->sub_x + 1 < 9 ? s->sub_x + 1 : 9;
        s->sub_or = 1;
    } else if (a == CR_MINATAR_UP) {
        s->sub_y = s->sub_y - 1 > 0 ? s->sub_y - 1 : 0;
    } else if (a == CR_MINATAR_DOWN) {
        s->sub_y = s->sub_y + 1 < 8 ? s->sub_y + 1 : 8;
    }

    r += cr_minatar_seaquest_update_f_bullets(s);
    cr_minatar_seaquest_update_divers(s);
    r += cr_minatar_seaquest_update_enemies(s, CR_SQ_SUBS(s), 1);
    cr_minatar_seaquest_update_e_bullets(s);
    r += cr_minatar_seaquest_update_enemies(s, CR_SQ_FISH(s), 0);

    if (s->e_spawn_timer > 0) s->e_spawn_timer -= 1;
    if (s->d_spawn_timer > 0) s->d_spawn_timer -= 1;
    if (s->shot_timer > 0) s->shot_timer -= 1;
    if (s->oxygen <= 0) s->terminal = 1;
    if (s->sub_y > 0) {
        s->oxygen -= 1;
        s->surface = 0;
    } else if (!s->surface) {
        if (s->diver_count == 0) s->terminal = 1;
        else r += cr_minatar_seaquest_surface(s);
    }
    return r;
}

/* Environment.act (sticky action, then Env.act) with action (0..5), the full set; writes
 * obs (10, 10, 10), reward and terminated. */
CR_HD static inline void cr_minatar_seaquest_step(cr_minatar_seaquest_state *s, int32_t action,
                                                  uint8_t *obs, float *reward,
                                                  uint8_t *terminated) {
    int a = cr_minatar_sticky(&s->rng, &s->last_action, action);
    *reward = (float)cr_minatar_seaquest_act(s, a);
    *terminated = (uint8_t)s->terminal;
    cr_minatar_seaquest_observe(s, obs);
}

#endif
