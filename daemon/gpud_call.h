/* SPDX-License-Identifier: MIT */
#pragma once
#include "gpud.h"
