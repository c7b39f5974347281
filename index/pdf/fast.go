package pdf

/*
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

// The few MuPDF 1.24 declarations this file needs, copied from the headers of the MuPDF
// that go-fitz links in statically (go-fitz's include/mupdf/fitz). go-fitz's HTML(page)
// asks MuPDF to keep images and writes every picture on the page as base64 PNG, which
// costs ten times the text; this renders the same HTML without images. The symbols
// resolve against go-fitz's libraries, which the import of go-fitz links in.
typedef struct fz_context fz_context;
typedef struct fz_document fz_document;
typedef struct fz_page fz_page;
typedef struct fz_stream fz_stream;
typedef struct fz_device fz_device;
typedef struct fz_stext_page fz_stext_page;
typedef struct fz_buffer fz_buffer;
typedef struct fz_output fz_output;
typedef struct fz_cookie fz_cookie;
typedef struct fz_alloc_context fz_alloc_context;
typedef struct fz_locks_context fz_locks_context;
typedef struct { float x0, y0, x1, y1; } fz_rect;
typedef struct { float a, b, c, d, e, f; } fz_matrix;
typedef struct { int flags; float scale; } fz_stext_options;
typedef void (fz_message_cb)(void *user, const char *message);

fz_context *fz_new_context_imp(const fz_alloc_context *alloc, const fz_locks_context *locks, size_t max_store, const char *version);
void fz_drop_context(fz_context *ctx);
void fz_set_error_callback(fz_context *ctx, fz_message_cb *cb, void *user);
void fz_set_warning_callback(fz_context *ctx, fz_message_cb *cb, void *user);
sigjmp_buf *fz_push_try(fz_context *ctx);
int fz_do_try(fz_context *ctx);
int fz_do_catch(fz_context *ctx);
const char *fz_caught_message(fz_context *ctx);
void fz_register_document_handlers(fz_context *ctx);
fz_stream *fz_open_memory(fz_context *ctx, const unsigned char *data, size_t len);
void fz_drop_stream(fz_context *ctx, fz_stream *stm);
fz_document *fz_open_document_with_stream(fz_context *ctx, const char *magic, fz_stream *stream);
void fz_drop_document(fz_context *ctx, fz_document *doc);
int fz_count_pages(fz_context *ctx, fz_document *doc);
fz_page *fz_load_page(fz_context *ctx, fz_document *doc, int number);
void fz_drop_page(fz_context *ctx, fz_page *page);
fz_rect fz_bound_page(fz_context *ctx, fz_page *page);
fz_stext_page *fz_new_stext_page(fz_context *ctx, fz_rect mediabox);
void fz_drop_stext_page(fz_context *ctx, fz_stext_page *page);
fz_device *fz_new_stext_device(fz_context *ctx, fz_stext_page *page, const fz_stext_options *options);
void fz_close_device(fz_context *ctx, fz_device *dev);
void fz_drop_device(fz_context *ctx, fz_device *dev);
void fz_run_page_contents(fz_context *ctx, fz_page *page, fz_device *dev, fz_matrix transform, fz_cookie *cookie);
fz_buffer *fz_new_buffer(fz_context *ctx, size_t capacity);
void fz_drop_buffer(fz_context *ctx, fz_buffer *buf);
const char *fz_string_from_buffer(fz_context *ctx, fz_buffer *buf);
fz_output *fz_new_output_with_buffer(fz_context *ctx, fz_buffer *buf);
void fz_close_output(fz_context *ctx, fz_output *out);
void fz_drop_output(fz_context *ctx, fz_output *out);
void fz_print_stext_page_as_html(fz_context *ctx, fz_output *out, fz_stext_page *page, int id);

static void fn_quiet(void *user, const char *message) {}

typedef struct {
	fz_context *ctx;
	fz_document *doc;
	fz_stream *stream;
	unsigned char *data;
} fn_doc;

static void fn_close(fn_doc *d) {
	if (d == NULL) return;
	if (d->ctx != NULL) {
		fz_drop_document(d->ctx, d->doc);
		fz_drop_stream(d->ctx, d->stream);
		fz_drop_context(d->ctx);
	}
	free(d->data);
	free(d);
}

// fn_open takes ownership of data (malloc'd). It returns NULL when MuPDF cannot open it.
static fn_doc *fn_open(unsigned char *data, size_t len) {
	fn_doc *d = calloc(1, sizeof(fn_doc));
	if (d == NULL) { free(data); return NULL; }
	d->data = data;
	d->ctx = fz_new_context_imp(NULL, NULL, 256 << 20, "1.24.9");
	if (d->ctx == NULL) { fn_close(d); return NULL; }
	fz_set_error_callback(d->ctx, fn_quiet, NULL);
	fz_set_warning_callback(d->ctx, fn_quiet, NULL);
	fz_context *ctx = d->ctx;
	fz_stream *volatile stream = NULL;
	fz_document *volatile doc = NULL;
	if (!sigsetjmp(*fz_push_try(ctx), 0)) if (fz_do_try(ctx)) do {
		fz_register_document_handlers(ctx);
		stream = fz_open_memory(ctx, data, len);
		doc = fz_open_document_with_stream(ctx, "application/pdf", stream);
	} while (0);
	if (fz_do_catch(ctx)) {
		d->stream = stream;
		d->doc = doc;
		fn_close(d);
		return NULL;
	}
	d->stream = stream;
	d->doc = doc;
	return d;
}

// fn_page_html returns page n as MuPDF's HTML without images (malloc'd), or NULL with
// *err set to a malloc'd message.
static char *fn_page_html(fn_doc *d, int n, char **err) {
	fz_context *ctx = d->ctx;
	fz_page *volatile page = NULL;
	fz_stext_page *volatile text = NULL;
	fz_device *volatile dev = NULL;
	fz_buffer *volatile buf = NULL;
	fz_output *volatile out = NULL;
	char *volatile result = NULL;
	const fz_matrix identity = {1, 0, 0, 1, 0, 0};
	fz_stext_options opts = {0, 0};
	*err = NULL;
	if (!sigsetjmp(*fz_push_try(ctx), 0)) if (fz_do_try(ctx)) do {
		page = fz_load_page(ctx, d->doc, n);
		text = fz_new_stext_page(ctx, fz_bound_page(ctx, page));
		dev = fz_new_stext_device(ctx, text, &opts);
		fz_run_page_contents(ctx, page, dev, identity, NULL);
		fz_close_device(ctx, dev);
		buf = fz_new_buffer(ctx, 16384);
		out = fz_new_output_with_buffer(ctx, buf);
		fz_print_stext_page_as_html(ctx, out, text, n);
		fz_close_output(ctx, out);
		result = strdup(fz_string_from_buffer(ctx, buf));
	} while (0);
	if (fz_do_catch(ctx)) {
		*err = strdup(fz_caught_message(ctx));
		free(result);
		result = NULL;
	}
	fz_drop_output(ctx, out);
	fz_drop_buffer(ctx, buf);
	fz_drop_device(ctx, dev);
	fz_drop_stext_page(ctx, text);
	fz_drop_page(ctx, page);
	return result;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// fastDoc renders pages through MuPDF directly, without images.
type fastDoc struct{ d *C.fn_doc }

// openFast opens data a second time for page rendering; ok is false when MuPDF (of the
// expected version) cannot, and the caller should use go-fitz's HTML instead.
func openFast(data []byte) (*fastDoc, bool) {
	if len(data) == 0 {
		return nil, false
	}
	d := C.fn_open((*C.uchar)(C.CBytes(data)), C.size_t(len(data)))
	if d == nil {
		return nil, false
	}
	return &fastDoc{d: d}, true
}

// html returns page n (0-based) as HTML in go-fitz's format, without images.
func (f *fastDoc) html(n int) (string, error) {
	var cerr *C.char
	s := C.fn_page_html(f.d, C.int(n), &cerr)
	if s == nil {
		msg := "cannot render page"
		if cerr != nil {
			msg = C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
		}
		return "", errors.New(msg)
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s), nil
}

func (f *fastDoc) close() { C.fn_close(f.d) }
